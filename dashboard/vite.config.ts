// The dashboard is served by `kiln serve` under /ui/ (the page also at /), from files compiled
// into the binary: dist/ is committed (docs/serve.md#dashboard).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/ui/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
  },
});
