// The kernel's worker, started early (the JupyterLite edition of the llmmath book; written next to
// the pyodide-kernel extension's worker by _ext/jupyterlite_bundle.py, which fills in the names).
//
// The notebook page creates this worker as soon as it opens, before JupyterLite's app has started
// (about 2 s on a warm visit), and gives it to the kernel when the kernel asks for its worker
// (lite/kernel-prewarm-page.js). Meanwhile it starts Pyodide with the kernel's packages, imports
// the kernel, and loads the packages that the notebook's first code cell imports (the shipped
// notebook, named by the worker's name). Then it runs the kernel's own worker script, unchanged:
// when the kernel calls loadPyodide with the options this worker started with, it gets the Pyodide
// already started; with other options, a new one, as without this file.

(() => {  // nothing declared in the worker's global scope (the scripts it imports declare theirs)
  const LITE = new URL("__LLMMATH_TO_LITE__", self.location);
  const PYODIDE_URL = new URL("__LLMMATH_PYODIDE_URL__", LITE).href;
  const PACKAGES = __LLMMATH_PACKAGES__;
  const INDEX_URL = PYODIDE_URL.slice(0, PYODIDE_URL.lastIndexOf("/") + 1);

  importScripts(PYODIDE_URL);
  const startPyodide = self.loadPyodide;
  const notebook = self.name ? fetch(new URL(`files/${encodeURIComponent(self.name)}`, LITE)).then((r) => (r.ok ? r.json() : null))
    .catch(() => null) : Promise.resolve(null);

  const early = startPyodide({ indexURL: INDEX_URL, packages: PACKAGES }).then((pyodide) => {
    try {
      pyodide.runPython("import pyodide_kernel");
    } catch (err) {  // the kernel imports it again, and reports the error
      console.warn("kernel-prewarm: import pyodide_kernel", err);
    }
    notebook.then((nb) => {
      const cell = ((nb && nb.cells) || []).find((c) => c.cell_type === "code" && [].concat(c.source).join(""));
      if (cell) {
        const code = [].concat(cell.source).join("");
        return pyodide.loadPackagesFromImports(code).then(() => preImport(pyodide, code));
      }
    }).catch((err) => console.warn("kernel-prewarm: first cell's packages", err));
    return pyodide;
  });
  let given = false;

  // The first cell's imports of packages (top-level modules of the lock's packages; not of the
  // notebook's folder, not mounted yet), imported before the cell asks for them; what they write
  // (a warning) is written when the first cell starts, in its output, as if the cell had imported
  // them. A module that fails to import is left to the cell, which reports the error.
  const PRE_IMPORT = `
import contextlib, io, sys

def pre_import(names):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for name in names:
            try:
                __import__(name)
            except BaseException:
                pass
    if out.getvalue() or err.getvalue():
        from pyodide_kernel import ipython_shell

        def replay(info=None):
            ipython_shell.events.unregister("pre_run_cell", replay)
            sys.stdout.write(out.getvalue())
            sys.stderr.write(err.getvalue())

        ipython_shell.events.register("pre_run_cell", replay)
`;
  function preImport(pyodide, code) {
    const lock = pyodide._api._import_name_to_package_name;
    const found = pyodide.pyodide_py.code.find_imports(code);
    const names = [...new Set(found.toJs().map((name) => name.split(".")[0]))].filter((name) => lock.has(name));
    found.destroy();
    const scope = pyodide.globals.get("dict")();  // not the notebook's namespace
    try {
      pyodide.runPython(PRE_IMPORT, { globals: scope });
      scope.get("pre_import")(pyodide.toPy(names));
    } catch (err) {
      console.warn("kernel-prewarm: the first cell's imports", err);
    } finally {
      scope.destroy();
    }
  }

  function same(options) {
    const { indexURL, packages, ...rest } = options || {};
    return !given && Object.keys(rest).length === 0 && typeof indexURL === "string" &&
      new URL(indexURL, self.location).href === INDEX_URL && JSON.stringify(packages) === JSON.stringify(PACKAGES);
  }

  // the kernel's worker script imports pyodide.js (imported above: not again), then calls loadPyodide
  self.loadPyodide = (options) => {
    if (same(options)) {
      given = true;
      return early.catch(() => startPyodide(options));
    }
    return startPyodide(options);
  };
  const importNative = self.importScripts;
  self.importScripts = (...urls) => {
    const others = urls.filter((url) => new URL(url, self.location).href !== PYODIDE_URL);
    if (others.length) {
      importNative.apply(self, others);
    }
  };

  importNative.call(self, "__LLMMATH_KERNEL_WORKER__");
})();
