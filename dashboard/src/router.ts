// Client-side routes under /ui/ (the server answers the page for every path there).
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "runs"; query: URLSearchParams }
  | { page: "run"; id: number; query: URLSearchParams }
  | { page: "gpus" }
  | { page: "benchmarks"; query: URLSearchParams }
  | { page: "tests" }
  | { page: "missing"; path: string };

export function parse(location: Location): Route {
  const path = location.pathname.replace(/\/+$/, "");
  const query = new URLSearchParams(location.search);
  if (path === "" || path === "/ui" || path === "/ui/runs") return { page: "runs", query };
  const run = /^\/ui\/runs\/(\d+)$/.exec(path);
  if (run) return { page: "run", id: Number(run[1]), query };
  if (path === "/ui/gpus") return { page: "gpus" };
  if (path === "/ui/benchmarks") return { page: "benchmarks", query };
  if (path === "/ui/tests") return { page: "tests" };
  return { page: "missing", path };
}

export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  dispatchEvent(new PopStateEvent("popstate"));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(location));
  useEffect(() => {
    const update = () => setRoute(parse(location));
    addEventListener("popstate", update);
    return () => removeEventListener("popstate", update);
  }, []);
  return route;
}

// A link that navigates without reloading the page (plain clicks only).
export function onLinkClick(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = (event.target as Element).closest("a");
  if (!anchor || anchor.target || anchor.origin !== location.origin) return;
  if (!anchor.pathname.startsWith("/ui")) return;
  event.preventDefault();
  navigate(anchor.pathname + anchor.search + anchor.hash);
}

// Calls `load` now and every `ms` while `active`; the interval restarts when deps change.
export function usePoll(load: () => void | Promise<void>, ms: number, active: boolean, deps: unknown[]): void {
  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const tick = async () => {
      try {
        await load();
      } finally {
        if (!stopped && active) timer = window.setTimeout(tick, ms);
      }
    };
    tick();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, active]);
}
