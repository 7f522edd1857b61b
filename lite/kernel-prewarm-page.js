// (the llmmath book: lite/kernel-prewarm-page.js) The kernel's worker starts Pyodide while the app
// starts; the kernel is given this worker when it creates its own (lite/kernel-prewarm.js).
(function () {
  // jupyterlite-core unregisters its service worker and registers it again on the first visit the
  // worker controls unless localStorage has `${scriptURL}-version`, which it writes only on such a
  // visit: every second visit paid a new registration (about 2 s), which the kernel waits for to
  // mount the notebook's folder. Write the key as jupyterlite-core would, once this version's
  // worker is active (a new app version still unregisters the old worker).
  if (navigator.serviceWorker) {
    navigator.serviceWorker.ready.then((reg) => {
      const key = reg.active ? `${reg.active.scriptURL}-version` : null;
      if (key && localStorage.getItem(key) === null) {
        localStorage.setItem(key, "__LLMMATH_APP_VERSION__");
      }
    }).catch(() => {});
  }
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
