// What the browser scripts share (tests/e2e/dashboard*.mjs, run by tests/integration/
// dashboard*_test.sh, which start kiln serve and set the E2E_* variables): the environment,
// "ok: WHAT" / "FAIL: WHAT" lines that the shell script counts, waits that bound a hang (never
// assert a speed), screenshots, and the browser.
import { createRequire } from "node:module";
import path from "node:path";

export const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run tests/integration/dashboard_test.sh)`);
  return value;
};
export const LONG = 120_000;

let failures = 0;
export const failed = () => failures;
export const ok = (what) => console.log(`ok: ${what}`);
export const bad = (what) => {
  failures++;
  console.log(`FAIL: ${what}`);
};
export const check = (condition, what, detail = "") => (condition ? ok(what) : bad(detail ? `${what}: ${detail}` : what));
// Runs a wait; a timeout is a failed check, not the end of the script.
export async function expectSoon(what, wait) {
  try {
    await wait();
    ok(what);
    return true;
  } catch (e) {
    bad(`${what}: ${String(e.message ?? e).split("\n")[0]}`);
    return false;
  }
}
export const shot = (page, name) => page.screenshot({ path: path.join(env("E2E_ARTIFACTS"), `dashboard-${name}.png`), fullPage: true });

export async function launch() {
  const require = createRequire(path.join(env("E2E_PLAYWRIGHT"), "package.json"));
  const { chromium } = require(env("E2E_PLAYWRIGHT"));
  return chromium.launch({
    executablePath: env("E2E_CHROMIUM"),
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}
