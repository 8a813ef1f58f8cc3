// Live logs of a run: one server-sent event stream (GET /api/runs/ID/events, with the bearer
// token, so fetch-event-source rather than EventSource, which cannot send headers) feeds every
// job's lines; ANSI colours become HTML (ansi_up escapes the text), `##[group]`/`##[endgroup]`
// markers (kiln's stored form of ::group::/::endgroup::) fold, and a search box filters lines.
import { fetchEventSource } from "@microsoft/fetch-event-source";
import { AnsiUp } from "ansi_up";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { authHeaders, get, type Job, type LogLine, token } from "./api";

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

export function LogView({ job, logs, version, state }: { job: Job; logs: LogStore; version: number; state: StreamState }) {
  const [search, setSearch] = useState("");
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const box = useRef<HTMLDivElement>(null);
  const follow = useRef(true);
  const [showAll, setShowAll] = useState(false);
  const all = logs.of(job.id);
  const needle = search.trim().toLowerCase();
  // A long log renders its last lines only (the DOM of 100k lines makes the page crawl); the
  // search always covers every line.
  const hidden = needle || showAll ? 0 : Math.max(0, all.length - MAX_LINES);
  const entries = hidden ? all.slice(hidden) : all;
  const list = useMemo(() => blocks(entries), [job.id, version, all.length, hidden]);
  const matches = needle ? entries.filter((e) => e.kind === "line" && e.text.toLowerCase().includes(needle)).length : 0;

  useEffect(() => {
    const el = box.current;
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  }, [version, job.id, search]);

  let step: number | null | undefined = undefined;
  const stepName = (index: number | null) =>
    index === null ? "Set up and clean up" : job.steps.find((s) => s.index === index)?.name ?? `step ${index + 1}`;

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
        {list.map((block, b) => {
          const shown = needle ? block.entries.filter((e) => e.text.toLowerCase().includes(needle)) : block.entries;
          if (needle && shown.length === 0 && !(block.title ?? "").toLowerCase().includes(needle)) return null;
          const header =
            shown.length > 0 && shown[0].step !== step ? ((step = shown[0].step), <div class="step-header">{stepName(shown[0].step)}</div>) : null;
          if (block.title === null)
            return (
              <>
                {header}
                {shown.map((e) => (
                  <Line entry={e} />
                ))}
              </>
            );
          const id = `${job.id}:${block.entries[0]?.seq ?? b}:${b}`;
          const isOpen = needle ? true : open[id] ?? false;
          return (
            <>
              {header}
              <details
                class="group"
                data-testid="log-group"
                open={isOpen}
                onToggle={(e) => {
                  const now = (e.currentTarget as HTMLDetailsElement).open;
                  if (!needle && now !== isOpen) setOpen({ ...open, [id]: now });
                }}
              >
                <summary dangerouslySetInnerHTML={{ __html: block.title }} />
                {shown.map((e) => (
                  <Line entry={e} />
                ))}
              </details>
            </>
          );
        })}
      </div>
    </div>
  );
}
