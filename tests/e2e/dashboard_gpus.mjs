// The GPU page and the benchmark trends in headless Chromium (driven by
// tests/integration/dashboard_gpus_test.sh: kiln serve with four simulated GPUs, a job holding
// GPUs 0 and 1, a benchmark history with a 20% step). Prints "ok: WHAT" / "FAIL: WHAT" lines.
import { check, env, expectSoon, failed, launch, LONG, shot } from "./lib.mjs";

const base = env("E2E_BASE");
const run = env("E2E_RUN");
const step = env("E2E_STEP"); // the commit of the first result at the new level
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));

  // ---- the GPU page while the job holds the NVLink pair ----------------------------------------
  await page.goto(`${base}/ui/gpus`);
  await expectSoon("the page lists 4 GPUs, two held", () =>
    page.waitForFunction(
      () => document.querySelectorAll("[data-testid=gpu-card]").length === 4 && document.querySelectorAll("[data-testid=gpu-card][data-state=leased]").length === 2,
      null,
      { timeout: LONG },
    ),
  );
  const cards = page.getByTestId("gpu-card");
  const first = cards.nth(0);
  const text = async (locator) => ((await locator.textContent()) ?? "").replace(/\s+/g, " ").trim();
  const model = await text(first.getByTestId("gpu-model"));
  check(model.includes("NVIDIA H100 80GB HBM3") && model.includes("sm_90"), "GPU 0 shows its model and arch", model);
  check((await text(cards.nth(2).getByTestId("gpu-model"))).includes("NVIDIA L40S"), "GPU 2 shows its model");
  const memory = await text(first.getByTestId("gpu-memory"));
  check(/of 79\.6 GiB/.test(memory), "memory in GiB (81559 MiB as 79.6 GiB)", memory);
  check(!/\d{5}/.test(memory), "no raw MiB count of five digits", memory);
  check((await text(first.getByTestId("gpu-util"))) === "75%", "utilization as a percent", await text(first.getByTestId("gpu-util")));
  check((await text(first.getByTestId("gpu-temp"))) === "55 °C", "temperature in °C", await text(first.getByTestId("gpu-temp")));
  check((await text(cards.nth(2).getByTestId("gpu-util"))) === "—", "no utilization shown where the provider gives none");
  const holder = first.getByTestId("gpu-holder");
  const named = await text(holder);
  check(named.startsWith("acme/widgets / GPU E2E / hold"), "the holder is repository / workflow / job", named);
  check(!/serve-work|\(run \d+\)/.test(named), "not the checkout directory or the lease's text", named);
  check((await holder.getAttribute("href")) === `/ui/runs/${run}`, "the holder links to its run", (await holder.getAttribute("href")) ?? "");
  check((await text(cards.nth(1).getByTestId("gpu-holder"))) === named, "GPU 1 has the same holder");
  await shot(page, "gpus-held");

  const islands = await text(page.getByTestId("topology"));
  check(islands.includes("GPU 0, GPU 1 share NVLink"), "the topology names the NVLink island", islands);
  const cell = async (a, b) => text(page.locator(`[data-testid=topology-matrix] tbody tr:nth-child(${a + 1}) td:nth-child(${b + 2})`));
  check((await cell(0, 1)) === "NVLink", "the matrix: GPU 0 to GPU 1 is NVLink", await cell(0, 1));
  check((await cell(2, 3)) === "PCIe switch", "the matrix: GPU 2 to GPU 3 is one PCIe switch", await cell(2, 3));
  check((await cell(0, 2)) === "CPU interconnect", "the matrix: GPU 0 to GPU 2 (another NUMA node) goes through the CPU", await cell(0, 2));
  await page.getByTestId("topology").scrollIntoViewIfNeeded();
  await page.getByTestId("topology").screenshot({ path: `${env("E2E_ARTIFACTS")}/dashboard-gpus-topology.png` });

  await holder.click();
  await expectSoon("the holder's link opens the run page", () => page.waitForURL(`**/ui/runs/${run}`, { timeout: LONG }));

  // ---- benchmark trends ---------------------------------------------------------------------------
  await page.goto(`${base}/ui/benchmarks`);
  await expectSoon("the trends page charts both benchmarks", () =>
    page.waitForFunction(() => document.querySelectorAll("[data-testid=trend]").length === 2, null, { timeout: LONG }),
  );
  const attention = page.locator("[data-testid=trend][data-benchmark=attention]");
  const softmax = page.locator("[data-testid=trend][data-benchmark=softmax]");
  check((await attention.getByTestId("change-point").count()) === 1, "attention's chart marks one change point");
  check((await softmax.getByTestId("change-point").count()) === 0, "softmax's chart marks none");
  const marker = await text(attention.getByTestId("change-point").locator("text"));
  check(/^\+(19\.\d|20(\.\d)?)% at /.test(marker) && marker.endsWith(` at ${step.slice(0, 7)}`), "the marker says the step and its commit", marker);
  const row = await text(attention.getByTestId("change-point-row"));
  check(row.includes(`2.01 ms → 2.41 ms from commit ${step.slice(0, 10)}`), "the change point's levels in ms and its commit", row);
  const latest = await text(attention.getByTestId("trend-latest"));
  check(/^2\.4\d? ms$/.test(latest), "the latest value in ms, not 17 digits", latest);
  const axis = await attention.locator("svg text.axis").allTextContents();
  check(axis.some((t) => / ms$/.test(t)) && axis.every((t) => !/\d{6}/.test(t)), "the y axis in ms", axis.join(" | "));
  await shot(page, "trends");

  await page.goto(`${base}/ui/benchmarks?repository=acme%2Fnone`);
  await expectSoon("a repository without results says so", () => page.getByTestId("no-trends").waitFor({ timeout: LONG }));
  check(errors.length === 0, "no script errors on the pages", errors.join("; "));
} finally {
  await browser.close();
}
process.exit(failed() ? 1 : 0);
