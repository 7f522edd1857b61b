# ruff: noqa: F821 - appended to pyodide/_package_loader.py, whose names these are


# --- appended by the llmmath book's JupyterLite edition (_ext/jupyterlite_bundle.py) ---------------
# Pyodide installs every package it loads by unpacking its wheel into the in-memory file system,
# at every start of the kernel. Its unpack_buffer copies the wheel into a temporary file and then
# reads the zip's directory three times (shutil.unpack_archive, the installer's record, the list
# of shared libraries), checking each member's folder anew. This one reads the directory once,
# from the buffer, creates each folder once and writes each member straight from its compressed
# bytes; anything but a zip or a wheel goes to Pyodide's own.
_pyodide_unpack_buffer = unpack_buffer


def unpack_buffer(buffer, *, filename="", format=None, extract_dir=None, calculate_dynlibs=False,
                  installer=None, source=None):
    import io
    import os
    import struct
    import zlib

    filename = filename.rpartition("/")[-1]
    if format or not filename.endswith((".whl", ".zip")):
        return _pyodide_unpack_buffer(buffer, filename=filename, format=format, extract_dir=extract_dir,
                                      calculate_dynlibs=calculate_dynlibs, installer=installer, source=source)
    data = buffer.to_bytes()
    view = memoryview(data)
    end = data.rfind(b"PK\x05\x06")
    if end < 0:
        raise ValueError(f"{filename} is not a zip archive")
    count, _, offset = struct.unpack_from("<HII", data, end + 10)
    target = os.path.abspath(extract_dir or ".")
    os.makedirs(target, exist_ok=True)
    made, dynlibs = {target}, []
    for _ in range(count):
        method, csize, size, nlen, xlen, clen, header = struct.unpack_from("<10xH8xIIHHH8xI", data, offset)
        name = data[offset + 46:offset + 46 + nlen].decode()
        offset += 46 + nlen + xlen + clen
        if name.startswith("/") or ".." in name.split("/"):
            raise ValueError(f"{filename}: unsafe path {name!r}")
        path = f"{target}/{name}".rstrip("/")
        folder = path if name.endswith("/") else path.rpartition("/")[0]
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        if name.endswith("/"):
            continue
        hnlen, hxlen = struct.unpack_from("<HH", data, header + 26)
        start = header + 30 + hnlen + hxlen
        member = view[start:start + csize]
        if method == 8:
            member = zlib.decompress(member, -15)
        elif method != 0:
            raise ValueError(f"{filename}: {name} is compressed with method {method}")
        if len(member) != size:
            raise ValueError(f"{filename}: {name} has {len(member)} bytes, not {size}")
        with open(path, "wb", buffering=0) as f:
            f.write(member)
        if calculate_dynlibs and should_load_dynlib(name):
            dynlibs.append(os.path.realpath(path))
    if filename.endswith(".whl"):
        z = ZipFile(io.BytesIO(data))
        set_wheel_installer(filename, z, Path(target), installer, source)
        install_datafiles(filename, z, Path(target))
    return to_js(dynlibs) if calculate_dynlibs else None
