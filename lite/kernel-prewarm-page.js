// (the llmmath book: lite/kernel-prewarm-page.js) The kernel's worker starts Pyodide while the app
// starts; the kernel is given this worker when it creates its own (lite/kernel-prewarm.js).
(function () {
  const path = new URLSearchParams(location.search).get("path");
  if (self.crossOriginIsolated || !path || !path.endsWith(".ipynb") || path.includes("/")) {
    return;
  }
  const base = new URL("__LLMMATH_EXTENSION__", location.href);
  const kernelWorker = new URL("__LLMMATH_KERNEL_WORKER__", base).href;
  const Native = window.Worker;
  let early = new Native(new URL("__LLMMATH_PREWARM__", base), { name: path });
  window.Worker = function Worker(url, options) {
    const asked = new URL(url, location.href);  // the app adds ?v=<its hash> to the name
    if (early && asked.origin + asked.pathname === kernelWorker && !(options && options.type === "module")) {
      const worker = early;
      early = null;
      window.Worker = Native;
      return worker;
    }
    return new Native(url, options);
  };
  window.Worker.prototype = Native.prototype;
})();
