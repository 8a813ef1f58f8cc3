// The dashboard in headless Chromium (driven by tests/integration/dashboard_test.sh, which
// starts kiln serve and sets the E2E_* variables). Prints "ok: WHAT" or "FAIL: WHAT" per check;
// the shell script counts them. Waits are generous: they bound a hang, never assert a speed.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { check, env, expectSoon, failed, launch, LONG, shot } from "./lib.mjs";

const base = env("E2E_BASE");
const token = env("E2E_TOKEN");
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const foreign = [];
  context.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith(base) && !url.startsWith("data:") && !url.startsWith(`blob:${base}`)) foreign.push(url); // blob: a download
  });
  const page = await context.newPage();
  const consoleErrors = [];
  page.on("pageerror", (error) => consoleErrors.push(String(error)));

  // ---- the runs list, empty; the token asked for once and kept ----------------------------------
  await page.goto(`${base}/`);
  await expectSoon("the dashboard shows an empty runs list", () =>
    page.getByTestId("no-runs").waitFor({ timeout: LONG }),
  );
  page.once("dialog", (dialog) => dialog.accept(token));
  await page.getByTestId("token-button").click();
  await page.waitForLoadState("load");
  await expectSoon("the token is kept (the button says so after the reload)", () =>
    page.getByTestId("token-button").filter({ hasText: "✓" }).waitFor({ timeout: LONG }),
  );
  check((await page.evaluate(() => sessionStorage.getItem("kiln.token"))) === token, "the token is in the tab's sessionStorage");
  check((await page.evaluate(() => localStorage.getItem("kiln.token"))) === null, "and not in localStorage (it goes with the tab)");

  // ---- a signed webhook; the run appears and is live --------------------------------------------
  const delivered = execFileSync(env("E2E_DELIVER"), { encoding: "utf8" });
  check(delivered.includes('"trigger"'), "the signed webhook was accepted", delivered);
  await expectSoon("the run appears in the list", () => page.getByTestId("run-row").first().waitFor({ timeout: LONG }));
  // Without a reload: the list polls. The run stays running until the gate opens below.
  await expectSoon("the run shows as running", () =>
    page.locator("[data-testid=run-row] .badge[data-status=running]").waitFor({ timeout: LONG }),
  );
  await shot(page, "runs-live");

  // ---- the GPU fleet while the gpu job holds one -------------------------------------------------
  const fleet = await context.newPage();
  await fleet.goto(`${base}/ui/gpus`);
  await expectSoon(`the fleet lists ${env("E2E_GPUS")} GPUs`, () =>
    fleet.waitForFunction((n) => document.querySelectorAll("[data-testid=gpu-card]").length === n, Number(env("E2E_GPUS")), { timeout: LONG }),
  );
  await expectSoon("a GPU is leased by the running gpu job", () =>
    fleet.locator("[data-testid=gpu-card][data-state=leased]").first().waitFor({ timeout: LONG }),
  );
  const holder = await fleet.locator("[data-testid=gpu-card][data-state=leased] [data-testid=gpu-holder]").first().textContent();
  check(/acme\/widgets \/ Dashboard E2E \/ gpu/.test(holder ?? ""), "the leased GPU names its holder (repository / workflow / job)", holder ?? "");
  await shot(fleet, "gpus-leased");

  // ---- the run page: graph, live logs, ANSI, groups, search -------------------------------------
  await page.locator("[data-testid=run-row] a").first().click();
  await expectSoon("the run page opens with its title", () =>
    page.getByTestId("run-title").filter({ hasText: "Dashboard E2E" }).waitFor({ timeout: LONG }),
  );
  await expectSoon("the job graph shows build and gpu", () =>
    page.waitForFunction(() => ["build", "gpu"].every((k) => document.querySelector(`[data-testid=job-node][data-job="${k}"]`)), null, { timeout: LONG }),
  );
  await page.locator('[data-testid=job-node][data-job="build"]').click();
  const logLine = (text) => page.locator("[data-testid=log-line]", { hasText: text });
  await expectSoon("log lines stream in (LIVE-LINE 3)", () => logLine("LIVE-LINE 3").waitFor({ timeout: LONG }));
  check((await logLine("AFTER-GATE").count()) === 0, "they arrived while the job was still running (nothing after the gate yet)");
  check((await page.locator("h1 .badge").getAttribute("data-status")) === "running", "the run is running meanwhile");
  check((await page.getByTestId("stream-state").textContent())?.includes("live"), "the log says it is live");
  const red = page.locator("[data-testid=log-line] .ansi-red-fg", { hasText: "RED-TEXT" });
  check((await red.count()) === 1, "ANSI red becomes a coloured span");
  check((await page.locator("[data-testid=log-line] .ansi-green-fg", { hasText: "GREEN-TEXT" }).count()) === 1, "bold green too");
  check(!(await page.getByTestId("log-box").textContent()).includes("\u001b["), "no raw escape sequence is shown");
  const group = page.getByTestId("log-group").filter({ hasText: "Compile details" });
  check((await group.count()) === 1, "::group:: becomes a foldable group");
  check(!(await logLine("INSIDE-GROUP").isVisible()), "the group starts folded");
  await group.locator("summary").click();
  await expectSoon("unfolding shows the group's line", () => logLine("INSIDE-GROUP").waitFor({ state: "visible", timeout: 10_000 }));
  await page.getByTestId("log-search").fill("LIVE-LINE 2");
  await expectSoon("search finds the one matching line", () =>
    page.getByTestId("log-matches").filter({ hasText: "1 matching line" }).waitFor({ timeout: 10_000 }),
  );
  check((await logLine("LIVE-LINE 1").count()) === 0, "search hides the lines that do not match");
  await page.getByTestId("log-search").fill("");
  await shot(page, "run-live");

  // ---- the gate opens: more lines stream in, the run ends as success ----------------------------
  writeFileSync(env("E2E_GATE"), "open\n");
  await expectSoon("lines printed after the gate stream in (AFTER-GATE 3)", () => logLine("AFTER-GATE 3").waitFor({ timeout: LONG }));
  await expectSoon("the run's status goes to success", () =>
    page.locator("h1 .badge[data-status=success]").waitFor({ timeout: LONG }),
  );
  await expectSoon("the test job appears, with an edge from each job it needs", () =>
    page.waitForFunction(
      () => document.querySelector('[data-testid=job-node][data-job="test"][data-status=success]') && document.querySelectorAll("[data-testid=job-edge]").length === 2,
      null,
      { timeout: LONG },
    ),
  );
  const states = await page.$$eval("[data-testid=job-node]", (els) => els.map((e) => `${e.dataset.job}=${e.dataset.status}`).sort());
  check(states.join(" ") === "build=success gpu=success long=success test=success", "every job node shows success", states.join(" "));
  check(/\d/.test((await page.getByTestId("run-duration").textContent()) ?? ""), "the run shows its duration");
  await expectSoon("the stream says complete", () => page.getByTestId("stream-state").filter({ hasText: "complete" }).waitFor({ timeout: LONG }));
  await shot(page, "run-done");

  // ---- the job's step summary: rendered Markdown, an attacker's markup inert -------------------
  await page.locator('[data-testid=job-node][data-job="test"]').click();
  if (await expectSoon("the test job's step summary is shown", () => page.getByTestId("job-summary").waitFor({ timeout: LONG }))) {
    const summary = page.getByTestId("job-summary");
    check((await summary.locator("h3").textContent()) === "Benchmark summary", "its Markdown heading is rendered as a heading");
    check((await summary.locator("td", { hasText: "attention" }).count()) === 1, "its Markdown table is rendered as a table");
    check((await summary.locator('a[href="https://example.invalid/docs"]').count()) === 1, "an https link is a link");
    const unsafe = await summary.evaluate((el) => ({
      scripts: el.querySelectorAll("script, img, iframe, object, embed").length,
      handlers: [...el.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
      javascript: [...el.querySelectorAll("[href], [src]")].filter((e) => /^\s*javascript:/i.test(e.getAttribute("href") ?? e.getAttribute("src") ?? "")).length,
      text: el.textContent,
    }));
    check(unsafe.scripts === 0 && unsafe.handlers === 0 && unsafe.javascript === 0, "no script, element with an event handler or javascript: URL comes from the summary", JSON.stringify(unsafe));
    check(unsafe.text.includes('<script>window.pwned = "script"</script>'), "raw HTML in the summary is shown as text");
    await page.waitForTimeout(500); // an onerror would have fired by now
    check((await page.evaluate(() => window.pwned)) === undefined, "nothing of the attacker's ran", String(await page.evaluate(() => window.pwned)));
    await shot(page, "summary");
  }
  await page.locator('[data-testid=job-node][data-job="build"]').click();

  // A long log shows its last 5000 lines, and all of them on request.
  await page.locator('[data-testid=job-node][data-job="long"]').click();
  await expectSoon("a 6000-line log shows its end", () => logLine("LONG-6000").waitFor({ timeout: LONG }));
  check((await logLine(/^LONG-1$/).count()) === 0, "its first lines are not rendered");
  check(/^\d+ earlier lines not shown/.test((await page.getByTestId("log-show-all").textContent()) ?? ""), "it says how many lines it left out");
  await page.getByTestId("log-show-all").click();
  await expectSoon("show all renders the first line too", () => logLine(/^LONG-1$/).waitFor({ timeout: 30_000 }));
  await page.locator('[data-testid=job-node][data-job="build"]').click();

  // ---- tests, benchmarks, telemetry ------------------------------------------------------------
  await page.getByTestId("tab-tests").click();
  await expectSoon("the tests tab shows the failed test", () =>
    page.getByTestId("test-failure").filter({ hasText: "test_backward" }).waitFor({ timeout: LONG }),
  );
  check((await page.getByTestId("tests").textContent()).includes("2 tests") || (await page.getByTestId("tests").textContent()).includes("2tests"), "the totals count both tests");
  await shot(page, "tests");
  await page.getByTestId("tab-benchmarks").click();
  await expectSoon("the benchmarks tab shows the benchmark with its trend", () =>
    page.locator("[data-testid=benchmark-row]", { hasText: "attention" }).locator("svg.sparkline").waitFor({ timeout: LONG }),
  );
  const benchRow = await page.locator("[data-testid=benchmark-row]", { hasText: "attention" }).textContent();
  // bench.json's 1.9189999999999998 ms is stored as nanoseconds: at most 3 decimals, unit kept.
  check(benchRow.includes("1919666.667 ns") && !/\.\d{4}/.test(benchRow), "the benchmark value is printed for people (1919666.667 ns)", benchRow);
  await shot(page, "benchmarks");
  await page.getByTestId("tab-telemetry").click();
  const runId = Number(new URL(page.url()).pathname.split("/").pop());
  const telemetry = await page.request.get(`${base}/api/runs/${runId}/telemetry`, { headers: { Authorization: `Bearer ${token}` } });
  const body = telemetry.ok() ? await telemetry.json() : null;
  const samples = (body?.jobs ?? []).some((j) => j.gpus.some((g) => g.samples.length > 0));
  if (samples)
    await expectSoon("the telemetry tab charts the samples", () => page.getByTestId("chart-util").first().waitFor({ timeout: LONG }));
  else
    await expectSoon(`the telemetry tab says "no telemetry" (the endpoint answered ${telemetry.status()})`, () =>
      page.getByTestId("no-telemetry").waitFor({ timeout: LONG }),
    );

  // The charts against the endpoint's documented shape (docs/serve.md#dashboard), whatever this
  // build's server answers: a document with two GPUs' samples, handed to the page by playwright.
  const charted = await context.newPage();
  await charted.route(`${base}/api/runs/${runId}/telemetry`, (route) => {
    const t0 = Date.now() - 60_000;
    const samples = (scale) =>
      Array.from({ length: 30 }, (_, i) => ({
        t: t0 + i * 2000, util: (i * 3 * scale) % 100, mem_util: 40, mem_used_mib: 1000 * scale + i * 10,
        mem_total_mib: 81559, power_w: 200 + i, temp_c: 50 + i / 3, throttle: [],
      }));
    route.fulfill({
      contentType: "application/json",
      body: JSON.stringify({ jobs: [{ job_id: 0, key: "gpu", gpus: [{ index: 0, uuid: "GPU-a", samples: samples(1) }, { index: 1, uuid: "GPU-b", samples: samples(2) }] }] }),
    });
  });
  await charted.goto(`${base}/ui/runs/${runId}`);
  await charted.getByTestId("tab-telemetry").click();
  await expectSoon("a telemetry document's samples become four charts", () =>
    charted.waitForFunction(() => ["util", "mem_used_mib", "power_w", "temp_c"].every((k) => document.querySelector(`[data-testid=chart-${k}] canvas`)), null, { timeout: LONG }),
  );
  const legend = await charted.getByTestId("chart-util").textContent();
  check(legend.includes("GPU 0") && legend.includes("GPU 1"), "one line per GPU", legend);
  await shot(charted, "telemetry");
  await charted.close();

  // ---- the fleet after the run, and the list's filters -----------------------------------------
  await expectSoon("every GPU is free again after the run", () =>
    fleet.waitForFunction(() => [...document.querySelectorAll("[data-testid=gpu-card]")].every((e) => e.dataset.state === "free"), null, { timeout: LONG }),
  );
  await shot(fleet, "gpus");
  const rows = async (query) => {
    await page.goto(`${base}/ui/${query}`);
    await page.waitForFunction(() => document.querySelector("[data-testid=run-row], [data-testid=no-runs]"), null, { timeout: LONG });
    return page.getByTestId("run-row").count();
  };
  check((await rows("?status=success")) === 1, "filter status=success lists the run");
  check((await rows("?status=failure")) === 0, "filter status=failure lists nothing");
  check((await rows("?branch=main")) === 1, "filter branch=main lists the run");
  check((await rows("?branch=nope")) === 0, "filter branch=nope lists nothing");
  check((await rows("?repository=acme%2Fwidgets")) === 1, "filter repository=acme/widgets lists the run");
  check((await rows("?repository=other%2Frepo")) === 0, "filter repository=other/repo lists nothing");
  await page.goto(`${base}/ui/`);
  await page.getByTestId("filter-status").selectOption("failure");
  await expectSoon("choosing a status in the filter updates the list", () => page.getByTestId("no-runs").waitFor({ timeout: LONG }));
  check(page.url().includes("status=failure"), "the filter is kept in the address");

  // ---- a failing job's class and evidence (GET /api/runs/ID failure_class) --------------------
  // The broken branch runs only fail.yml, whose job fails with exit code 3: class code.
  const triggered = await page.request.post(`${base}/api/triggers`, {
    headers: { Authorization: `Bearer ${token}` },
    data: { repository: "acme/widgets", ref: "broken" },
  });
  check(triggered.ok(), "a push of the broken branch is triggered over the API", String(triggered.status()));
  await page.goto(`${base}/ui/?branch=broken`);
  await expectSoon("the broken branch's run is listed", () => page.getByTestId("run-row").first().waitFor({ timeout: LONG }));
  await page.locator("[data-testid=run-row] a").first().click();
  const brokenNode = page.locator('[data-testid=job-node][data-job="broken"][data-status=failure][data-class=code]');
  await expectSoon("the failed job's node carries its class", () => brokenNode.waitFor({ timeout: LONG }));
  const nodeText = (await brokenNode.textContent({ timeout: 5000 }).catch(() => null)) ?? "";
  check(nodeText.includes("failure · code"), "and shows it", nodeText);
  await brokenNode.click({ timeout: 5000 }).catch(() => {});
  await expectSoon("the job's class and evidence are shown above its log", () =>
    page.locator("[data-testid=failure-class][data-class=code]").waitFor({ timeout: LONG }),
  );
  const evidence = (await page.getByTestId("failure-evidence").textContent({ timeout: 5000 }).catch(() => null)) ?? "";
  check(evidence === "step 'Break' exited with code 3", "the evidence is the stored line", evidence);
  await shot(page, "failure-class");
  const brokenRun = Number(new URL(page.url()).pathname.split("/").pop());

  // ---- the failed run's page: steps, the failing step at its end, annotations, matrix ---------
  const steps = await page.$$eval("[data-testid=step-row]", (els) => els.map((e) => `${e.querySelector("a").textContent.replace(/^\d+\. /, "")}=${e.dataset.status}`));
  check(steps.includes("Prepare=success") && steps.includes("Break=failure"), "the job's steps are listed with their states", steps.join(" "));
  check(
    (await page.$$eval("[data-testid=step-duration]", (els) => els.map((e) => e.textContent))).every((t) => /\d/.test(t)),
    "each step shows its duration",
  );
  const breakIndex = await page.$eval("[data-testid=step-row][data-status=failure]", (e) => e.dataset.step).catch(() => "");
  await expectSoon("the failing step's last line is in the log", () => logLine("FAIL-LAST").waitFor({ timeout: LONG }));
  await page.waitForTimeout(300); // the stream's end places the box
  const placement = await page.evaluate((step) => {
    const box = document.querySelector("[data-testid=log-box]");
    const open = [...document.querySelectorAll("[data-testid=step-log]")].map((d) => `${d.dataset.step}:${d.open}`);
    const last = [...document.querySelectorAll("[data-testid=log-line]")].find((l) => l.textContent === "FAIL-LAST");
    const first = [...document.querySelectorAll("[data-testid=log-line]")].find((l) => l.textContent === "FAIL-LINE 1");
    const b = box.getBoundingClientRect();
    const inBox = (el) => el && el.getBoundingClientRect().top >= b.top && el.getBoundingClientRect().bottom <= b.bottom + 1;
    return { open, step, lastShown: inBox(last), firstShown: inBox(first) };
  }, breakIndex);
  check(
    placement.open.includes(`${breakIndex}:true`) && placement.open.filter((o) => o.endsWith(":true")).length === 1,
    "the failing step is the one step open",
    JSON.stringify(placement.open),
  );
  check(placement.lastShown && !placement.firstShown, "the log is scrolled to the failing step's last lines", JSON.stringify(placement));
  const annotations = await page.$$eval("[data-testid=annotation]", (els) =>
    els.map((e) => `${e.dataset.level} ${e.querySelector("[data-testid=annotation-where]")?.textContent ?? "-"} ${e.querySelector("[data-testid=annotation-message]").textContent}`),
  );
  const onFiles = annotations.filter((a) => !a.includes(" - "));
  check(
    onFiles.length === 2 && onFiles[0] === "error src/kernel.cu:42:5 bad cast in kernel" && onFiles[1] === "warning src/util.h:7 deprecated helper",
    "the annotations on files are listed with file and line, errors first",
    JSON.stringify(annotations),
  );
  check(annotations.indexOf("error - Process completed with exit code 3.") >= 0 && annotations.indexOf("error - Process completed with exit code 3.") < annotations.indexOf(onFiles[1]), "with kiln's own (the exit code), errors before warnings", JSON.stringify(annotations));
  const matrixGroup = page.locator('[data-testid=job-group][data-node="matrix"]');
  await expectSoon("the matrix's three jobs are one group", () => page.locator('[data-testid=job-group][data-node="matrix"][data-count="3"]').waitFor({ timeout: LONG }));
  const counts = (await matrixGroup.getByTestId("job-group-counts").textContent({ timeout: 5000 }).catch(() => null)) ?? "";
  check(counts.includes("3 jobs") && counts.includes("2 success") && counts.includes("1 failure"), "the group counts how its jobs ended", counts);
  check((await matrixGroup.locator('[data-testid=job-row][data-job="matrix (mi250)"][data-status=failure]').count()) === 1, "and names each by its matrix values");
  check((await page.getByTestId("commit-message").textContent()).includes("a workflow"), "the commit's message is shown");
  check((await page.getByTestId("run-actor").textContent()) === "kiln-trigger", "the actor is who triggered it", await page.getByTestId("run-actor").textContent());
  await shot(page, "run-failed");

  // ---- artifacts: listed, downloaded as NAME.zip with the token --------------------------------
  await expectSoon("the run's artifact is listed", () => page.locator('[data-testid=artifact][data-name="widgets-out"]').waitFor({ timeout: LONG }));
  const [saved] = await Promise.all([
    page.waitForEvent("download", { timeout: LONG }),
    page.locator('[data-testid=artifact][data-name="widgets-out"] [data-testid=artifact-download]').click(),
  ]);
  check(saved.suggestedFilename() === "widgets-out.zip", "the download is widgets-out.zip", saved.suggestedFilename());
  const zipPath = await saved.path();
  const zip = zipPath ? readFileSync(zipPath) : Buffer.alloc(0);
  check(zip.subarray(0, 2).toString() === "PK" && zip.includes(Buffer.from("widgets.txt")), "it is a zip holding widgets.txt", `${zip.length} bytes`);
  await expectSoon("the page says it was downloaded", () => page.getByTestId("action-result").filter({ hasText: "downloaded" }).waitFor({ timeout: LONG }));

  // ---- re-run the failed jobs: a new attempt, the matrix's successes reused ---------------------
  await page.getByTestId("rerun-failed").click();
  await expectSoon("re-run failed jobs says it queued attempt 2", () =>
    page.getByTestId("action-result").filter({ hasText: "(attempt 2)" }).waitFor({ timeout: LONG }),
  );
  await expectSoon("and links the new run once it started", () => page.getByTestId("action-run-link").waitFor({ timeout: LONG }));
  await shot(page, "rerun");
  await page.getByTestId("action-run-link").click();
  await expectSoon("the new run is attempt 2, a re-run of the failed one", () =>
    page.getByTestId("run-attempt").filter({ hasText: `run #${brokenRun}` }).waitFor({ timeout: LONG }),
  );
  await expectSoon("it ends (failed again: the same commit)", () => page.locator("h1 .badge[data-status=failure]").waitFor({ timeout: LONG }));
  const reused = await page.locator('[data-testid=job-row][data-job="matrix (a100)"]').textContent({ timeout: LONG }).catch(() => "");
  check(reused.includes(`reused from run #${brokenRun}`), "a matrix job that succeeded is reused, not run again", reused);
  check((await page.getByTestId("rerun-failed").count()) === 1 && (await page.getByTestId("cancel-run").count()) === 0, "a finished run offers re-runs, not cancel");

  // ---- cancel a running run ----------------------------------------------------------------------
  const slow = await page.request.post(`${base}/api/triggers`, { headers: { Authorization: `Bearer ${token}` }, data: { repository: "acme/widgets", ref: "slow" } });
  check(slow.ok(), "a push of the slow branch is triggered", String(slow.status()));
  await page.goto(`${base}/ui/?branch=slow`);
  await expectSoon("the slow run is listed", () => page.getByTestId("run-row").first().waitFor({ timeout: LONG }));
  await page.locator("[data-testid=run-row] a").first().click();
  await expectSoon("its job runs", () => page.locator('[data-testid=job-row][data-job="wait"][data-status=running]').waitFor({ timeout: LONG }));
  check((await page.getByTestId("rerun-all").count()) === 0, "a running run offers cancel, not re-runs");
  await page.getByTestId("cancel-run").click();
  await expectSoon("cancel says it is cancelling", () => page.getByTestId("action-result").filter({ hasText: "Cancelling" }).waitFor({ timeout: LONG }));
  await expectSoon("the run ends cancelled", () => page.locator("h1 .badge[data-status=cancelled]").waitFor({ timeout: LONG }));
  await shot(page, "cancelled");

  // ---- approve a stranger's fork pull request ----------------------------------------------------
  const pull = execFileSync(env("E2E_DELIVER"), ["pull"], { encoding: "utf8" });
  check(pull.includes("waiting_approval"), "mallory's fork pull request waits for approval", pull);
  const anonymous = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const reader = await anonymous.newPage();
  await reader.goto(`${base}/ui/`);
  await expectSoon("a reader without a token sees the waiting trigger", () =>
    reader.locator("[data-testid=trigger-row][data-status=waiting_approval]").waitFor({ timeout: LONG }),
  );
  check((await reader.getByTestId("approve-trigger").count()) === 0, "but no approve button");
  await reader.goto(`${base}/ui/runs/${brokenRun}`);
  await reader.getByTestId("run-title").waitFor({ timeout: LONG });
  check(
    (await reader.getByTestId("run-actions").count()) === 0 && (await reader.getByTestId("artifacts").count()) === 0,
    "nor re-run, cancel or artifacts on a run",
  );
  await anonymous.close();
  await page.goto(`${base}/ui/`);
  const waiting = page.locator("[data-testid=trigger-row][data-status=waiting_approval]");
  await expectSoon("the token holder sees it with an approve button", () => waiting.getByTestId("approve-trigger").waitFor({ timeout: LONG }));
  await shot(page, "approve");
  await waiting.getByTestId("approve-trigger").click();
  await expectSoon("approved, its run appears", () =>
    page.locator("[data-testid=run-row]", { hasText: "Pull request" }).waitFor({ timeout: LONG }),
  );
  const prRow = (await page.locator("[data-testid=run-row]", { hasText: "Pull request" }).textContent({ timeout: 5000 }).catch(() => null)) ?? "";
  check(prRow.includes("pull_request") && prRow.includes("mallory"), "a pull_request run, by mallory", prRow);

  // ---- the quarantined tests (GET /api/tests/quarantine) ----------------------------------------
  await page.getByTestId("nav-tests").click();
  const quarantined = page.locator('[data-testid=quarantined-test][data-test="tests.test_model::test_backward"]');
  await expectSoon("the tests page lists the test quarantined by hand", () => quarantined.waitFor({ timeout: LONG }));
  const row = (await quarantined.textContent({ timeout: 5000 }).catch(() => null)) ?? "";
  check(row.includes("acme/widgets") && row.includes("flaky on CI (e2e)") && row.includes("hand"), "with its repository, reason and who put it there", row);
  check(((await quarantined.getByTestId("quarantine-expires").textContent({ timeout: 5000 }).catch(() => null)) ?? "") !== "", "and until when");
  check((await page.getByTestId("quarantined-test").count()) === 1, "and nothing else");
  await shot(page, "quarantine");

  // A wrong token: the log pane says the server refused it (and shows no log).
  await page.evaluate(() => sessionStorage.setItem("kiln.token", "wrong-token"));
  await page.goto(`${base}/ui/runs/${runId}`);
  await expectSoon("with a wrong token the log pane says the token was refused", () =>
    page.getByTestId("logs-need-token").filter({ hasText: "refused" }).waitFor({ timeout: LONG }),
  );
  check((await page.getByTestId("log-line").count()) === 0, "and shows no log line");

  check(foreign.length === 0, "the pages requested nothing outside kiln serve", foreign.join(" "));
  check(consoleErrors.length === 0, "no script error on the page", consoleErrors.join(" | "));
} finally {
  await browser.close();
}
process.exit(failed() > 0 ? 1 : 0);
