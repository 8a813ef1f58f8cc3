// A private dashboard (serve.dashboard: private) in headless Chromium, driven by
// tests/integration/dashboard_private_test.sh: without a token the page shows no run, only that
// it is private; with the token the run is listed and its page opens.
import { check, env, expectSoon, failed, launch, LONG, shot } from "./lib.mjs";

const base = env("E2E_BASE");
const token = env("E2E_TOKEN");
const browser = await launch();
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const consoleErrors = [];
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  await page.goto(`${base}/`);
  await expectSoon("without a token the runs page says the dashboard is private", () =>
    page.getByTestId("read-error").filter({ hasText: "private" }).waitFor({ timeout: LONG }),
  );
  check((await page.getByTestId("run-row").count()) === 0, "and lists no run");
  await shot(page, "private");
  await page.goto(`${base}/ui/runs/1`);
  await expectSoon("a run's page says so too", () => page.getByTestId("read-error").filter({ hasText: "private" }).waitFor({ timeout: LONG }));
  check((await page.getByTestId("run-title").count()) === 0, "and shows nothing of the run");

  await page.goto(`${base}/`);
  page.once("dialog", (dialog) => dialog.accept(token));
  await page.getByTestId("token-button").click();
  await page.waitForLoadState("load");
  await expectSoon("with the token the run is listed", () => page.getByTestId("run-row").first().waitFor({ timeout: LONG }));
  await page.locator("[data-testid=run-row] a").first().click();
  await expectSoon("and its page opens", () => page.getByTestId("run-title").filter({ hasText: "Private" }).waitFor({ timeout: LONG }));
  check(consoleErrors.length === 0, "no script error on the page", consoleErrors.join(" | "));
} finally {
  await browser.close();
}
process.exit(failed() > 0 ? 1 : 0);
