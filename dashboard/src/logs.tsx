// Live logs of a run: one server-sent event stream (GET /api/runs/ID/events, with the bearer
// token, so fetch-event-source rather than EventSource, which cannot send headers) feeds every
// job's lines; ANSI colours become HTML (ansi_up escapes the text), `##[group]`/`##[endgroup]`
// markers (kiln's stored form of ::group::/::endgroup::) fold, and a search box filters lines.
import { fetchEventSource } from "@microsoft/fetch-event-source";
import { AnsiUp } from "ansi_up";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { authHeaders, duration, get, type Job, type LogLine, token } from "./api";
import { failingStep, stepName } from "./run_parts";

interface Entry {
  seq: number;
  kind: "line" | "group" | "endgroup";
  html: string;
  text: string; // without ANSI sequences, for search
  stream: string;
  step: number | null;
  level: string; // "", "debug", "warning", "error", "notice"
}

// Every job's lines, in arrival order; `version` changes when something arrived.
export class LogStore {
  private entries = new Map<number, Entry[]>();
  private ansi = new Map<number, AnsiUp>();
  lastSeq = 0;
  version = 0;

  add(line: LogLine): void {
    if (line.seq <= this.lastSeq) return; // a reconnect replays what we have
    this.lastSeq = line.seq;
    let converter = this.ansi.get(line.job_id);
    if (!converter) {
      converter = new AnsiUp();
      converter.use_classes = true;
      this.ansi.set(line.job_id, converter);
    }
    const list = this.entries.get(line.job_id) ?? [];
    for (const raw of line.text.split("\n")) {
      let kind: Entry["kind"] = "line";
      let text = raw;
      let level = "";
      const marker = /^(?:##\[(group|endgroup|debug|warning|error|notice)\]|::(group|endgroup)::)(.*)$/.exec(raw);
      if (marker) {
        const name = marker[1] ?? marker[2];
        text = marker[3];
        if (name === "group" || name === "endgroup") kind = name;
        else level = name;
      }
      const html = converter.ansi_to_html(text);
      list.push({ seq: line.seq, kind, html, text: text.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, ""), stream: line.stream, step: line.step, level });
    }
    this.entries.set(line.job_id, list);
    this.version++;
  }

  of(job: number): Entry[] {
    return this.entries.get(job) ?? [];
  }
}

type StreamState = "connecting" | "live" | "ended" | "no-token" | "refused" | "closed" | "error";

// Opens the run's event stream; calls onStatus for `status` events. Lines go into `logs`.
export function useRunEvents(runId: number, logs: LogStore, onStatus: (status: string) => void): [StreamState, number] {
  const [state, setState] = useState<StreamState>(token() ? "connecting" : "no-token");
  const [version, setVersion] = useState(0);
  useEffect(() => {
    if (!token()) return;
    const controller = new AbortController();
    let frame = 0;
    const bump = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion(logs.version);
      });
    };
    class Stop extends Error {}
    fetchEventSource(`/api/runs/${runId}/events?after=${logs.lastSeq}`, {
      headers: authHeaders(),
      signal: controller.signal,
      openWhenHidden: true,
      async onopen(res) {
        if (res.status === 401 || res.status === 403) {
          // 401: a wrong token; 403: the server has no serve.api_tokens, so logs are closed.
          setState(res.status === 401 ? "refused" : "closed");
          throw new Stop();
        }
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        setState("live");
      },
      onmessage(event) {
        if (event.event === "log") {
          logs.add(JSON.parse(event.data) as LogLine);
          bump();
        } else if (event.event === "status") {
          onStatus(JSON.parse(event.data).status);
        } else if (event.event === "end") {
          onStatus(JSON.parse(event.data).status);
          setState("ended");
          controller.abort();
        }
      },
      onclose() {
        // The server closed without `end` (it is shutting down): try again in a while.
        throw new Error("closed");
      },
      onerror(error) {
        if (error instanceof Stop) throw error;
        setState("error");
        return 2000;
      },
    }).catch(() => {});
    return () => {
      controller.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [runId]);
  return [state, version];
}

// Fallback when the stream is not used: reads every line once (for a finished run it is all).
export async function loadAllLogs(runId: number, logs: LogStore): Promise<void> {
  for (;;) {
    const page = await get<{ lines: LogLine[]; next: number }>(`/api/runs/${runId}/logs?after=${logs.lastSeq}&limit=1000`);
    for (const line of page.lines) logs.add(line);
    if (page.lines.length < 1000) return;
  }
}

const MAX_LINES = 5000;

interface Block {
  title: string | null; // null: lines outside any group
  entries: Entry[];
}

function blocks(entries: Entry[]): Block[] {
  const out: Block[] = [{ title: null, entries: [] }];
  for (const entry of entries) {
    if (entry.kind === "group") out.push({ title: entry.html, entries: [] });
    else if (entry.kind === "endgroup") out.push({ title: null, entries: [] });
    else out[out.length - 1].entries.push(entry);
  }
  return out.filter((b) => b.title !== null || b.entries.length > 0);
}

function Line({ entry }: { entry: Entry }) {
  return (
    <div
      class={`line ${entry.stream === "stderr" ? "stderr" : ""} ${entry.stream === "system" ? "system" : ""} ${entry.level ? `lvl-${entry.level}` : ""}`}
      data-testid="log-line"
      data-seq={entry.seq}
      dangerouslySetInnerHTML={{ __html: entry.html || "&nbsp;" }}
    />
  );
}

// One step's lines (consecutive lines of one step index; null: set-up and clean-up).
interface Section {
  step: number | null;
  entries: Entry[];
}

function sections(entries: Entry[]): Section[] {
  const out: Section[] = [];
  for (const entry of entries) {
    const last = out[out.length - 1];
    if (last && last.step === entry.step) last.entries.push(entry);
    else out.push({ step: entry.step, entries: [entry] });
  }
  return out;
}

function Blocks({ entries, needle, open, setOpen, prefix }: { entries: Entry[]; needle: string; open: Record<string, boolean>; setOpen: (id: string, value: boolean) => void; prefix: string }) {
  return (
    <>
      {blocks(entries).map((block, b) => {
        const shown = needle ? block.entries.filter((e) => e.text.toLowerCase().includes(needle)) : block.entries;
        if (needle && shown.length === 0 && !(block.title ?? "").toLowerCase().includes(needle)) return null;
        if (block.title === null)
          return (
            <>
              {shown.map((e) => (
                <Line entry={e} />
              ))}
            </>
          );
        const id = `${prefix}:${block.entries[0]?.seq ?? b}:${b}`;
        const isOpen = needle ? true : open[id] ?? false;
        return (
          <details
            class="group"
            data-testid="log-group"
            open={isOpen}
            onToggle={(e) => {
              const now = (e.currentTarget as HTMLDetailsElement).open;
              if (!needle && now !== isOpen) setOpen(id, now);
            }}
          >
            <summary dangerouslySetInnerHTML={{ __html: block.title }} />
            {shown.map((e) => (
              <Line entry={e} />
            ))}
          </details>
        );
      })}
    </>
  );
}

// The selected job's log, a section per step headed by its state and duration. A failed job
// shows its failing step open, at its last lines (the other steps folded); `focus` opens a step
// and scrolls to it (a click in the step list).
export function LogView({
  job,
  logs,
  version,
  state,
  now,
  focus,
}: {
  job: Job;
  logs: LogStore;
  version: number;
  state: StreamState;
  now: number;
  focus: { step: number; n: number } | null;
}) {
  const [search, setSearch] = useState("");
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const box = useRef<HTMLDivElement>(null);
  const follow = useRef(true);
  const placed = useRef<number | null>(null);
  const [showAll, setShowAll] = useState(false);
  const all = logs.of(job.id);
  const needle = search.trim().toLowerCase();
  const failing = failingStep(job);
  // A long log renders its last lines only (the DOM of 100k lines makes the page crawl); the
  // search always covers every line.
  const hidden = needle || showAll ? 0 : Math.max(0, all.length - MAX_LINES);
  const entries = hidden ? all.slice(hidden) : all;
  const list = useMemo(() => sections(entries), [job.id, version, all.length, hidden]);
  const matches = needle ? entries.filter((e) => e.kind === "line" && e.text.toLowerCase().includes(needle)).length : 0;
  const sectionOpen = (section: Section, s: number) => {
    if (needle) return true;
    const key = `${job.id}:${s}:${section.step}`;
    if (key in open) return open[key];
    return failing === null || section.step === failing;
  };
  const sectionEl = (step: number) => box.current?.querySelector<HTMLElement>(`[data-testid=step-log][data-step="${step}"]`) ?? null;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    if (failing !== null && placed.current !== job.id && !needle) {
      // The failing step's end at the bottom of the box, once every line is here.
      const section = sectionEl(failing);
      if (section) {
        el.scrollTop = section.offsetTop + section.offsetHeight - el.clientHeight;
        follow.current = false;
        if (state === "ended") placed.current = job.id;
      }
      return;
    }
    if (follow.current) el.scrollTop = el.scrollHeight;
  }, [version, job.id, search, failing, state]);

  useEffect(() => {
    if (!focus) return;
    const s = list.findIndex((section) => section.step === focus.step);
    if (s < 0) return;
    setOpen((o) => ({ ...o, [`${job.id}:${s}:${focus.step}`]: true }));
    requestAnimationFrame(() => {
      const section = sectionEl(focus.step);
      if (section && box.current) {
        follow.current = false;
        placed.current = job.id;
        box.current.scrollTop = section.offsetTop;
      }
    });
  }, [focus?.n]);

  const stepOf = (index: number | null) => (index === null ? undefined : job.steps.find((s) => s.index === index));

  return (
    <div class="logs">
      <div class="log-toolbar">
        <input
          type="search"
          data-testid="log-search"
          placeholder="Search the log"
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
        />
        {needle && <span data-testid="log-matches">{matches} matching line{matches === 1 ? "" : "s"}</span>}
        <span class={`stream s-${state}`} data-testid="stream-state">
          {state === "live" ? "● live" : state === "ended" ? "complete" : state === "connecting" ? "connecting…" : state === "error" ? "reconnecting…" : ""}
        </span>
      </div>
      <div
        class="log-box"
        data-testid="log-box"
        ref={box}
        onScroll={(e) => {
          const el = e.currentTarget;
          follow.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {entries.length === 0 && <div class="muted">No output yet.</div>}
        {hidden > 0 && (
          <button class="show-all" data-testid="log-show-all" onClick={() => setShowAll(true)}>
            {hidden} earlier lines not shown: show all
          </button>
        )}
        {list.map((section, s) => {
          const step = stepOf(section.step);
          const stepState = step ? step.conclusion || step.status : "";
          const isOpen = sectionOpen(section, s);
          const key = `${job.id}:${s}:${section.step}`;
          if (needle && !section.entries.some((e) => e.text.toLowerCase().includes(needle))) return null;
          return (
            <details
              class={`step-log ${section.step !== null && section.step === failing ? "failing" : ""}`}
              data-testid="step-log"
              data-step={section.step ?? ""}
              open={isOpen}
              onToggle={(e) => {
                const now = (e.currentTarget as HTMLDetailsElement).open;
                if (!needle && now !== isOpen) setOpen((o) => ({ ...o, [key]: now }));
              }}
            >
              <summary class="step-header">
                {stepName(job, section.step)}
                {step && (
                  <>
                    {" "}
                    <span class={`step-state s-${stepState}`} data-testid="step-log-state">
                      {stepState}
                    </span>{" "}
                    <span class="step-time">{duration(step.started_at, step.finished_at, now)}</span>
                  </>
                )}
              </summary>
              <Blocks entries={section.entries} needle={needle} open={open} setOpen={(id, value) => setOpen((o) => ({ ...o, [id]: value }))} prefix={key} />
            </details>
          );
        })}
      </div>
    </div>
  );
}
