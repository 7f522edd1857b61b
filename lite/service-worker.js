// The JupyterLite edition's service worker (written over jupyterlite-core's service-worker.js by
// _ext/jupyterlite_bundle.py, which fills in VERSION and IMMUTABLE).
//
// It does what jupyterlite-core 0.6.4's does (the same heartbeat, and the same relay of the
// kernel's file-system and stdin requests to the page over the "/sw-api.v1" broadcast channel),
// and it keeps the files that never change under their URL in the browser's Cache Storage, so a
// second visit reads Pyodide, its packages and the app's hashed bundles without asking the
// server, whatever caching headers the server sends (`python3 -m http.server` sends none).
// A URL is kept when IMMUTABLE matches its path: Pyodide's folder is named after a hash of its
// files (the bundled sha256s), the app's bundles carry a content hash in their names. Everything
// else (pages, jupyter-lite.json, the notebooks, api/) goes to the network as without a service
// worker, and so does WebAssembly: the browser keeps the compiled code of pyodide.asm.wasm with
// its HTTP cache entry, not with a response the service worker gives (measured: a second visit
// spent about a second more CPU when the service worker served it). VERSION is a hash of every kept file: a rebuild that changes one makes a new service
// worker, which drops the caches of the other versions when it takes over.

const VERSION = "__LLMMATH_VERSION__";
const IMMUTABLE = new RegExp(__LLMMATH_IMMUTABLE__);
const CACHE = `llmmath-lite-${VERSION}`;
const broadcast = new BroadcastChannel("/sw-api.v1");

self.addEventListener("install", () => { self.skipWaiting(); });
self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name !== CACHE && (name.startsWith("llmmath-lite-") || name === "precache")) {
        await caches.delete(name);
      }
    }
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (url.pathname === "/api/service-worker-heartbeat") {
    event.respondWith(new Response("ok"));
  } else if (url.origin === location.origin &&
             (url.pathname.includes("/api/drive") || url.pathname.includes("/api/stdin/"))) {
    event.respondWith(broadcastOne(request, url));
  } else if (request.method === "GET" && url.origin === location.origin && IMMUTABLE.test(url.pathname) &&
             !url.pathname.endsWith(".wasm")) {
    event.respondWith(cacheFirst(event));
  }
  // anything else: the browser fetches it as if there were no service worker
});

// The cache is looked up by the exact URL: the app asks for its bundles with the same query string
// at every visit (`?v=<hash>`), and `ignoreSearch` made Chromium compare the URL with every entry
// of the cache (about 6 ms a request, 0.3 ms without, measured with 39 entries of 300).
async function cacheFirst(event) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(event.request);
  if (hit) {
    return hit;
  }
  const response = await fetch(event.request);
  if (response.ok && response.status === 200) {
    event.waitUntil(cache.put(event.request, response.clone()));
  }
  return response;
}

// the kernel's synchronous requests (DriveFS, stdin), answered by the page (as jupyterlite-core's)
async function broadcastOne(request, url) {
  const message = await request.json();
  const answered = new Promise((resolve) => {
    const handler = (event) => {
      const data = event.data;
      if (data.browsingContextId !== message.browsingContextId) {
        return;
      }
      resolve(new Response(JSON.stringify(data.response)));
      broadcast.removeEventListener("message", handler);
    };
    broadcast.addEventListener("message", handler);
  });
  message.pathname = url.pathname;
  broadcast.postMessage(message);
  return await answered;
}
