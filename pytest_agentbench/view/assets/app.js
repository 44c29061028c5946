/* agentbench view: the browser side. Vanilla JavaScript, no build step.
 *
 * Every string in a payload may be hostile (agent output, file names, task ids): the DOM is
 * built with createElement and text nodes only, and links are only ever this app's own "#/"
 * routes, each part passed through encodeURIComponent.
 */
"use strict";

(() => {
  const MODES = ["server", "bundle", "inline"];
  const MODE = MODES.includes(window.AGENTBENCH_MODE) ? window.AGENTBENCH_MODE : "server";
  const BUNDLE_TIMEOUT_MS = 20000;
  const POLL_MS = 2000;
  const PAGE_ROWS = 200;
  const PROMPT_PREVIEW = 1200; // characters of a prompt the index carries per task (payloads.py)
  const SCATTER_POINTS = 4000; // per configuration: more only slows the chart down
  const SERIES = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"];
  const LETTERS = {
    P: "first exact",
    R: "exact after recovery or retry",
    F: "not exact",
    S: "not scored",
  };
  const MCNEMAR_CELLS = {
    both: "both exact",
    base_only: "base only",
    candidate_only: "candidate only",
    neither: "neither exact",
  };

  // ---------------------------------------------------------------------------------------
  // Payloads: deliver / load in the three modes

  const delivered = new Map(); // name -> data, from bundle scripts and inline scripts
  const waiting = new Map(); // name -> [{resolve, reject}], bundle scripts still loading
  const cache = new Map(); // name -> Promise of data
  const texts = new Map(); // server mode: name -> response text, to tell a real change apart

  function deliver(name, data) {
    const key = String(name);
    delivered.set(key, data);
    for (const waiter of waiting.get(key) || []) waiter.resolve(data);
    waiting.delete(key);
  }

  function load(name) {
    if (!cache.has(name)) {
      const promise =
        MODE === "server"
          ? fetchPayload(name)
          : MODE === "bundle"
            ? scriptPayload(name)
            : inlinePayload(name);
      cache.set(name, promise);
      promise.catch(() => cache.delete(name)); // a failed load may be tried again later
    }
    return cache.get(name);
  }

  function payloadPath(name) {
    return name.split("/").map(encodeURIComponent).join("/");
  }

  async function fetchPayload(name) {
    const response = await fetch(`api/${payloadPath(name)}`, { cache: "no-store" });
    if (!response.ok) throw new Error(`${name}: the server answered ${response.status}`);
    const text = await response.text();
    texts.set(name, text);
    return JSON.parse(text);
  }

  function scriptPayload(name) {
    if (delivered.has(name)) return Promise.resolve(delivered.get(name));
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      const done = () => {
        clearTimeout(timer);
        script.remove();
      };
      const fail = () => {
        done();
        waiting.delete(name);
        reject(new Error(`${name}: not in this bundle`));
      };
      const timer = setTimeout(fail, BUNDLE_TIMEOUT_MS);
      const waiters = waiting.get(name) || [];
      waiters.push({
        resolve: (data) => {
          done();
          resolve(data);
        },
        reject,
      });
      waiting.set(name, waiters);
      script.onerror = fail;
      // A script that loads but delivers nothing under this name is as good as absent.
      script.onload = () =>
        setTimeout(() => {
          if (waiting.has(name)) fail();
        }, 0);
      script.src = `data/${payloadPath(name)}.js`;
      document.head.append(script);
    });
  }

  function inlinePayload(name) {
    if (delivered.has(name)) return Promise.resolve(delivered.get(name));
    return Promise.reject(new Error(`${name}: not in this report`));
  }

  window.agentbench = { deliver, load, mode: MODE };

  // ---------------------------------------------------------------------------------------
  // DOM building: text only

  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = String(value);
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key === "value" || key === "checked" || key === "selected") el[key] = value;
      else if (key === "href") el.setAttribute("href", ownLink(value));
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  /** Replace el's children (null and false children are left out, as in h()). */
  function fill(el, ...children) {
    el.replaceChildren();
    return append(el, children);
  }

  /** Links point into this app only: anything else is a bug, never a URL from data. */
  function ownLink(value) {
    const link = String(value);
    if (!link.startsWith("#/")) throw new Error(`refusing a link outside the app: ${link}`);
    return link;
  }

  function route(parts, query) {
    const path = parts.map((part) => encodeURIComponent(String(part))).join("/");
    const search = query ? new URLSearchParams(cleanQuery(query)).toString() : "";
    return `#/${path}${search ? `?${search}` : ""}`;
  }

  function cleanQuery(query) {
    return Object.fromEntries(
      Object.entries(query).filter(([, v]) => v !== "" && v !== null && v !== undefined && v !== false),
    );
  }

  /** A titled section; a plain object first among the children is the section's props. */
  function section(title, ...children) {
    const [first] = children;
    const props =
      first && typeof first === "object" && !(first instanceof Node) && !Array.isArray(first)
        ? children.shift()
        : null;
    return h("section", props, h("h2", null, title), ...children);
  }

  function tableBox(table) {
    return h("div", { class: "table-box" }, table);
  }

  function table(head, rows) {
    return tableBox(
      h(
        "table",
        null,
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            head.map((cell) => (cell instanceof Node ? cell : h("th", null, cell))),
          ),
        ),
        h("tbody", null, rows),
      ),
    );
  }

  function td(value, cls) {
    return h("td", { class: cls }, value);
  }

  function pre(text, cls) {
    return h("pre", { class: cls }, text === null || text === undefined ? "" : String(text));
  }

  function facts(pairs) {
    const dl = h("dl", { class: "facts" });
    for (const [label, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      dl.append(h("dt", null, label), h("dd", null, value));
    }
    return dl;
  }

  /** Any nested object as label/value rows, for blocks whose shape the app does not know. */
  function flatFacts(obj, limit = 80) {
    const pairs = [];
    const walk = (value, path) => {
      if (pairs.length >= limit) return;
      if (value && typeof value === "object" && !Array.isArray(value)) {
        for (const [key, inner] of Object.entries(value)) walk(inner, path ? `${path}.${key}` : key);
      } else if (Array.isArray(value)) {
        pairs.push([
          path,
          value.map((item) => (typeof item === "object" ? JSON.stringify(item) : String(item))).join(", ") ||
            "–",
        ]);
      } else {
        pairs.push([
          path,
          value === null ? "–" : typeof value === "number" ? fmtNumber(value) : String(value),
        ]);
      }
    };
    walk(obj, "");
    return facts(pairs);
  }

  function note(text) {
    return h("p", { class: "note" }, text);
  }

  // ---------------------------------------------------------------------------------------
  // Numbers

  const isNum = (x) => typeof x === "number" && Number.isFinite(x);
  const fmtPct = (x) => (isNum(x) ? `${(x * 100).toFixed(1)}%` : "–");
  const fmtPts = (x) => (isNum(x) ? `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} pts` : "–");
  const fmtCount = (x) => (isNum(x) ? Math.round(x).toLocaleString("en-US") : "–");
  const fmtUsd = (x) => (isNum(x) ? `$${x.toFixed(Math.abs(x) < 1 ? 4 : 2)}` : "–");
  const fmtSecs = (x) => (isNum(x) ? `${x.toFixed(x < 10 ? 2 : 1)} s` : "–");
  const fmtP = (x) => (isNum(x) ? (x < 0.001 ? "<0.001" : x.toFixed(3)) : "–");

  function fmtNumber(x) {
    if (!isNum(x)) return "–";
    if (Number.isInteger(x)) return fmtCount(x);
    return Math.abs(x) >= 100 ? x.toFixed(1) : x.toPrecision(3);
  }

  function fmtSigned(x) {
    return isNum(x) ? `${x >= 0 ? "+" : ""}${fmtNumber(x)}` : "–";
  }

  function fmtInterval(ci, fmt) {
    return Array.isArray(ci) && ci.length === 2 ? `[${fmt(ci[0])}, ${fmt(ci[1])}]` : "";
  }

  // ---------------------------------------------------------------------------------------
  // Routes

  function safeDecode(part) {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  }

  function parseRoute(hash) {
    const raw = hash.replace(/^#\/?/, "");
    const cut = raw.indexOf("?");
    const path = cut < 0 ? raw : raw.slice(0, cut);
    const query = new URLSearchParams(cut < 0 ? "" : raw.slice(cut + 1));
    const parts = path.split("/").filter(Boolean).map(safeDecode);
    const [head, ...rest] = parts;
    if (!head) return { page: "overview", query };
    if (head === "tasks" && !rest.length) return { page: "tasks", query };
    if (head === "task" && rest.length === 1) return { page: "task", id: rest[0], query };
    if (head === "trial" && rest.length === 2) return { page: "trial", key: rest[0], index: rest[1], query };
    if (head === "compare" && !rest.length) return { page: "compare", query };
    if (head === "compare" && rest.length === 2)
      return { page: "compare", base: rest[0], candidate: rest[1], query };
    if (head === "compare" && rest.length === 4 && rest[2] === "cell") {
      return { page: "cell", base: rest[0], candidate: rest[1], cell: rest[3], query };
    }
    return { page: "missing", query };
  }

  /** Replace the query of the current route without a history entry (typing, filters). */
  function replaceQuery(query) {
    const raw = location.hash.replace(/^#\/?/, "");
    const path = raw.split("?")[0];
    const search = new URLSearchParams(cleanQuery(query)).toString();
    history.replaceState(null, "", `#/${path}${search ? `?${search}` : ""}`);
  }

  const trialLink = (key, index) => route(["trial", key, index]);

  // ---------------------------------------------------------------------------------------
  // The index and what is derived from it once

  const derived = new WeakMap(); // index payload -> lookups built from it

  function lookups(index) {
    if (!derived.has(index)) {
      const configs = new Map(index.configurations.map((c) => [c.key, c]));
      const tasks = new Map(index.tasks.map((t) => [t.id, t]));
      derived.set(index, { configs, tasks });
    }
    return derived.get(index);
  }

  function outcomeLink(key, trialIndex, letter, title) {
    return h(
      "a",
      {
        class: `o o-${letter} trial-link`,
        href: trialLink(key, trialIndex),
        title: `${title}: ${LETTERS[letter]}`,
        "aria-label": `trial ${trialIndex}: ${LETTERS[letter]}`,
      },
      letter,
    );
  }

  function outcomeLinks(key, cell, title) {
    return h(
      "span",
      { class: "outcomes" },
      [...cell.outcomes].map((letter, i) => outcomeLink(key, cell.trials[i], letter, `${title} #${i + 1}`)),
    );
  }

  function outcomeBadge(letter) {
    return h("span", { class: `o o-${letter}`, title: LETTERS[letter] }, letter);
  }

  /** Trials of one configuration, checked against the index so that no absent payload is asked for. */
  function validTrial(index, key, value) {
    const config = lookups(index).configs.get(key);
    const i = Number(value);
    return config && Number.isInteger(i) && i >= 0 && i < config.trials ? i : null;
  }

  // ---------------------------------------------------------------------------------------
  // Rendering: one page at a time, the newest navigation wins

  const main = document.getElementById("main");
  const statusEl = document.getElementById("status");
  let renderSeq = 0; // the newest navigation; an older one finishing late is dropped
  let renderCount = 0; // renders completed
  let lastNames = new Set(); // payloads the page on screen was built from (charts add theirs later)
  let charts = [];
  let trialList = []; // "key/index" of the current list, for j/k on a trial page
  const scrollMemory = new Map(); // hash -> scrollY when it was left

  const PAGES = {
    overview: overviewPage,
    tasks: tasksPage,
    task: taskPage,
    trial: trialPage,
    compare: comparePage,
    cell: cellPage,
    missing: async () => ({
      title: "Not found",
      node: h(
        "div",
        null,
        h("h1", null, "No such page"),
        h("p", null, h("a", { href: "#/" }, "Back to the overview")),
      ),
    }),
  };

  async function render({ keep = false } = {}) {
    const seq = ++renderSeq;
    const routeNow = parseRoute(location.hash);
    const names = new Set();
    const later = [];
    const ctx = {
      route: routeNow,
      need: (name) => {
        names.add(name);
        return load(name);
      },
      later: (fn) => later.push(fn),
      current: () => seq === renderSeq,
    };
    const kept = keep ? saveView() : null;
    let view;
    try {
      view = await PAGES[routeNow.page](ctx);
    } catch (err) {
      view = { title: "Not available", node: errorNode(err) };
    }
    if (seq !== renderSeq) return;
    destroyCharts();
    lastNames = names;
    main.replaceChildren(view.node);
    document.title = `${view.title} · agentbench view`;
    markNav(routeNow.page);
    const drawing = later.map((fn) => fn()); // charts: some wait for their payloads
    if (kept) restoreView(kept);
    else window.scrollTo(0, scrollMemory.get(location.hash) || 0);
    // Where the page stands, for whoever drives it (tests, benchmarks): the page is on
    // screen (main's route, renders), then drawn whole, figures too (body's page, ready).
    main.dataset.route = location.hash.replace(/^#\/?/, "").split("?")[0];
    main.dataset.renders = String(++renderCount);
    document.body.dataset.ready = "0";
    await Promise.allSettled(drawing);
    if (seq !== renderSeq) return;
    document.body.dataset.page = routeNow.page;
    document.body.dataset.ready = "1";
  }

  function errorNode(err) {
    return h(
      "div",
      null,
      h("h1", null, "Not available"),
      h("p", { class: "error" }, String(err && err.message ? err.message : err)),
      h("p", null, h("a", { href: "#/" }, "Back to the overview")),
    );
  }

  function markNav(page) {
    const section = page === "task" || page === "trial" ? "tasks" : page === "cell" ? "compare" : page;
    for (const link of document.querySelectorAll(".nav a")) {
      link.classList.toggle("current", link.dataset.page === section);
    }
  }

  /** What a live re-render must not lose: scroll, focus and caret, open <details>. */
  function saveView() {
    const active = document.activeElement;
    return {
      scroll: window.scrollY,
      focus: active && active.id ? active.id : null,
      caret:
        active && typeof active.selectionStart === "number"
          ? [active.selectionStart, active.selectionEnd]
          : null,
      open: [...main.querySelectorAll("details")].map((d) => d.open),
    };
  }

  function restoreView(kept) {
    const details = [...main.querySelectorAll("details")];
    if (details.length === kept.open.length)
      details.forEach((d, i) => {
        d.open = kept.open[i];
      });
    const focus = kept.focus && document.getElementById(kept.focus);
    if (focus) {
      focus.focus({ preventScroll: true });
      if (kept.caret && typeof focus.setSelectionRange === "function") focus.setSelectionRange(...kept.caret);
    }
    window.scrollTo(0, kept.scroll);
  }

  // ---------------------------------------------------------------------------------------
  // Charts (Chart.js, shipped beside this file)

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function chartsAvailable() {
    return typeof window.Chart === "function";
  }

  function chartBox(label, cls) {
    const canvas = h("canvas", { role: "img", "aria-label": label });
    return { box: h("div", { class: `chart-box ${cls || ""}` }, canvas), canvas };
  }

  function makeChart(canvas, config) {
    if (!chartsAvailable() || !canvas.isConnected) return;
    const Chart = window.Chart;
    Chart.defaults.color = css("--fg-muted");
    Chart.defaults.borderColor = css("--border");
    Chart.defaults.font.family = css("--sans");
    config.options = { responsive: true, maintainAspectRatio: false, animation: false, ...config.options };
    charts.push(new Chart(canvas, config));
  }

  function destroyCharts() {
    for (const chart of charts) chart.destroy();
    charts = [];
  }

  const seriesColour = (i) => SERIES[i % SERIES.length];

  // ---------------------------------------------------------------------------------------
  // Overview

  async function overviewPage(ctx) {
    const index = await ctx.need("index");
    const node = h(
      "div",
      null,
      h("h1", null, index.title),
      sourcesNote(index),
      section("Configurations", configurationCards(index)),
      armsSection(index),
      judgesSection(index),
      chartsSection(ctx, index),
      hardestTasks(index),
      integritySection(index),
      evidenceSection(index),
      spendSection(index),
      trajectoriesSection(index),
      measuresSection(index),
      meteringSection(index),
      rollupsSection(index),
      runsSection(index),
    );
    return { title: "Overview", node };
  }

  function sourcesNote(index) {
    const { sources } = index;
    return note(
      [
        `${sources.length} source${sources.length === 1 ? "" : "s"}: ${sources.join(", ")}`,
        ` · generated ${index.generated_at}`,
        index.live ? " · a run is still writing" : "",
      ].join(""),
    );
  }

  function simulatedMark(config, field) {
    return config.simulated.includes(field) ? " (simulated)" : "";
  }

  function configurationCards(index) {
    if (!index.configurations.length) return note("No trials yet.");
    return h(
      "div",
      { class: "grid" },
      index.configurations.map((config) => {
        const s = config.summary;
        const { run } = config;
        const k = s.k ? ` (k=${s.k})` : "";
        return h(
          "div",
          { class: "card" },
          h("h3", null, config.name),
          h("div", { class: "figure-label" }, "first exact"),
          h(
            "div",
            null,
            h("span", { class: "figure" }, fmtPct(s.first_exact)),
            " ",
            h(
              "span",
              { class: "interval", title: "interval over tasks" },
              fmtInterval(s.first_exact_ci, fmtPct),
            ),
          ),
          facts([
            ["agent", [run.agent, run.model, run.reasoning].filter(Boolean).join(" · ")],
            ["trials", fmtCount(s.trials)],
            ["final exact", fmtPct(s.final_exact)],
            [
              "pooled first exact",
              s.pooled_first_exact_ci
                ? `${fmtPct(s.pooled_first_exact)} ${fmtInterval(s.pooled_first_exact_ci, fmtPct)}`
                : null,
            ],
            ["EOF-normalized", fmtPct(s.eof_normalized)],
            [`pass@k${k}`, fmtPct(s.pass_at_k)],
            [`pass^k${k}`, fmtPct(s.pass_hat_k)],
            ["flip rate", fmtPct(s.flip_rate)],
            ["coverage", fmtPct(s.coverage)],
            ["not scored", notScored(config.evidence)],
            [`tokens, median${simulatedMark(config, "tokens")}`, fmtCount(s.tokens.median)],
            [`cost, total${simulatedMark(config, "cost_usd")}`, fmtUsd(s.cost_usd.total)],
            [`wall, median${simulatedMark(config, "wall_s")}`, fmtSecs(s.wall_s.median)],
          ]),
          h(
            "div",
            null,
            h("a", { href: route(["tasks"], { config: config.key }) }, "tasks"),
            config.trials ? [" · ", h("a", { href: trialLink(config.key, 0) }, "first trial")] : null,
          ),
        );
      }),
    );
  }

  /** The outcome classes besides scored, budget and breaker stops included (config.evidence). */
  function notScored(evidence) {
    return evidence.length ? evidence.map((e) => `${e.class} ${fmtCount(e.trials)}`).join(", ") : "none";
  }

  function pairKeys(index, baseName, armName) {
    const byName = (name) => index.configurations.find((c) => c.name === name);
    const base = byName(baseName);
    const candidate = byName(armName);
    if (!base || !candidate) return null;
    return listedPair(index, base.key, candidate.key) ? [base.key, candidate.key] : null;
  }

  function armsSection(index) {
    const arms = index.arms;
    if (!arms || !arms.paired.length) return null;
    const rows = arms.paired.map((pair) => {
      const first = pair.first_exact;
      const { trials } = first;
      const keys = pairKeys(index, pair.base, pair.arm);
      const label = `${pair.arm} − ${pair.base}`;
      return h(
        "tr",
        null,
        td(keys ? h("a", { href: route(["compare", ...keys]) }, label) : label, "wrap"),
        td(withInterval(fmtPts(first.point), fmtInterval(first.interval, fmtPts)), "num"),
        td(fmtP(first.sign_test_p), "num"),
        td(
          isNum(trials.both)
            ? [trials.both, trials.vanilla_only, trials.treatment_only, trials.neither]
                .map(fmtCount)
                .join(" / ")
            : "–",
          "num",
        ),
        td(fmtP(trials.p), "num"),
        td(ratioText(pair.tokens_ratio), "num"),
        td(ratioText(pair.cost_usd_ratio), "num"),
        td(ratioText(pair.wall_s_ratio), "num"),
      );
    });
    return section(
      "Arms",
      table(
        [
          "treatment − base",
          h("th", { class: "num" }, "first exact"),
          h("th", { class: "num" }, "sign p"),
          h(
            "th",
            { class: "num", title: "trials: both / base only / treatment only / neither exact" },
            "trials paired",
          ),
          h("th", { class: "num" }, "McNemar p"),
          h("th", { class: "num" }, "tokens"),
          h("th", { class: "num" }, "cost"),
          h("th", { class: "num" }, "time"),
        ],
        rows,
      ),
      note(
        "First exact: the mean per-task difference with its bootstrap interval; trials paired within each task.",
      ),
      armsMeasures(arms),
    );
  }

  function armsMeasures(arms) {
    const measured = arms.paired.filter((pair) => pair.measures);
    if (!measured.length) return null;
    return h(
      "div",
      { class: "grid arms-measures" },
      measured.map((pair) =>
        h(
          "div",
          { class: "card" },
          h("h3", null, `code measures, ${pair.arm} − ${pair.base}`),
          pairedMeasuresTable(pair.measures),
        ),
      ),
    );
  }

  function ratioText(ratio) {
    if (!isNum(ratio.point)) return "–";
    return withInterval(
      `×${ratio.point.toFixed(2)}`,
      fmtInterval(ratio.interval, (x) => x.toFixed(2)),
    );
  }

  /** A figure with its interval beneath it, so that narrow columns keep both whole. */
  function withInterval(figure, interval) {
    return [h("div", null, figure), interval ? h("div", { class: "interval" }, interval) : null];
  }

  function chartsSection(ctx, index) {
    if (!chartsAvailable()) return section("Charts", note("The charting library did not load."));
    const outcomes = chartBox("outcome distribution per configuration");
    const families = chartBox("first exact per family", "tall");
    const perTrial = chartBox("tokens and wall time per trial", "tall");
    const perTrialNote = note("");
    ctx.later(() => {
      outcomeChart(outcomes.canvas, index);
      familyChart(families.canvas, index);
      return trialScatter(ctx, perTrial.canvas, perTrialNote, index);
    });
    return section(
      "Charts",
      h(
        "div",
        { class: "grid-2" },
        h("div", { class: "card" }, h("h3", null, "Outcomes per configuration"), outcomes.box),
        h(
          "div",
          { class: "card" },
          h("h3", null, "Tokens and wall time per trial"),
          perTrial.box,
          perTrialNote,
        ),
      ),
      h(
        "div",
        { class: "card" },
        h("h3", null, "First exact per family"),
        families.box,
        note("Click a bar for the family's tasks."),
      ),
    );
  }

  function letterCounts(index) {
    const counts = new Map(index.configurations.map((c) => [c.key, { P: 0, R: 0, F: 0, S: 0 }]));
    for (const task of index.tasks) {
      for (const [key, cell] of Object.entries(task.cells)) {
        const tally = counts.get(key);
        for (const letter of cell.outcomes) tally[letter] += 1;
      }
    }
    return counts;
  }

  function outcomeChart(canvas, index) {
    const counts = letterCounts(index);
    const colours = { P: css("--pass"), R: css("--recover"), F: css("--fail"), S: css("--skip") };
    makeChart(canvas, {
      type: "bar",
      data: {
        labels: index.configurations.map((c) => c.name),
        datasets: Object.keys(LETTERS).map((letter) => ({
          label: LETTERS[letter],
          data: index.configurations.map((c) => counts.get(c.key)[letter]),
          backgroundColor: colours[letter],
          maxBarThickness: 48,
        })),
      },
      options: {
        indexAxis: "y",
        scales: { x: { stacked: true, title: { display: true, text: "trials" } }, y: { stacked: true } },
      },
    });
  }

  function familyRates(index) {
    // Per family and configuration: the mean of its tasks' first exact (tasks weigh alike).
    const sums = new Map();
    for (const task of index.tasks) {
      if (task.no_solution) continue;
      const { family } = task;
      if (!sums.has(family)) sums.set(family, new Map());
      for (const [key, cell] of Object.entries(task.cells)) {
        if (!isNum(cell.first_exact)) continue;
        const entry = sums.get(family).get(key) || { total: 0, n: 0 };
        entry.total += cell.first_exact;
        entry.n += 1;
        sums.get(family).set(key, entry);
      }
    }
    return sums;
  }

  function familyChart(canvas, index) {
    const sums = familyRates(index);
    const families = [...sums.keys()].sort();
    makeChart(canvas, {
      type: "bar",
      data: {
        labels: families.map((f) => f || "(none)"),
        datasets: index.configurations.map((config, i) => ({
          label: config.name,
          backgroundColor: seriesColour(i),
          maxBarThickness: 48,
          data: families.map((f) => {
            const entry = sums.get(f).get(config.key);
            return entry && entry.n ? (100 * entry.total) / entry.n : null;
          }),
        })),
      },
      options: {
        scales: {
          y: { min: 0, max: 100, title: { display: true, text: "first exact, %" } },
          x: { ticks: { autoSkip: false, maxRotation: 60, minRotation: 30 } },
        },
        onClick: (_event, elements) => {
          if (elements.length) location.hash = route(["tasks"], { family: families[elements[0].index] });
        },
      },
    });
  }

  async function trialScatter(ctx, canvas, noteEl, index) {
    let columns;
    try {
      columns = await Promise.all(index.configurations.map((c) => ctx.need(`trials/${c.key}`)));
    } catch (err) {
      noteEl.textContent = `Per-trial figures are not available: ${err.message}`;
      return;
    }
    if (!ctx.current()) return;
    let sampled = false;
    const datasets = index.configurations.map((config, i) => {
      const cols = columns[i];
      const n = cols.task.length;
      const stride = Math.max(1, Math.ceil(n / SCATTER_POINTS));
      sampled ||= stride > 1;
      const points = [];
      for (let t = 0; t < n; t += stride) {
        const x = cols.wall_s[t];
        const y = cols.tokens[t];
        if (isNum(x) && isNum(y)) points.push({ x, y, trial: t });
      }
      return {
        label: config.name,
        key: config.key,
        data: points,
        backgroundColor: seriesColour(i),
        pointRadius: 2.5,
      };
    });
    const simulated = index.configurations.some((c) => c.simulated.includes("tokens"));
    noteEl.textContent = [
      sampled ? "A sample of the trials." : "",
      simulated ? "Some figures are simulated." : "",
      "Click a point for its trial.",
    ]
      .filter(Boolean)
      .join(" ");
    makeChart(canvas, {
      type: "scatter",
      data: { datasets },
      options: {
        scales: {
          x: { title: { display: true, text: "wall time, s" } },
          y: { title: { display: true, text: "tokens" } },
        },
        plugins: {
          tooltip: {
            callbacks: {
              label: (item) => {
                const cols = columns[item.datasetIndex];
                const t = item.raw.trial;
                return `${cols.task[t]} r${cols.repeat[t]}: ${fmtCount(item.raw.y)} tokens, ${fmtSecs(item.raw.x)}`;
              },
            },
          },
        },
        onClick: (_event, elements) => {
          if (!elements.length) return;
          const { datasetIndex, index: point } = elements[0];
          const dataset = datasets[datasetIndex];
          location.hash = trialLink(dataset.key, dataset.data[point].trial);
        },
      },
    });
  }

  function hardestTasks(index) {
    const scored = index.tasks
      .map((task) => {
        const cells = Object.values(task.cells).filter((c) => isNum(c.first_exact));
        const rate = cells.length ? cells.reduce((sum, c) => sum + c.first_exact, 0) / cells.length : null;
        return { task, rate };
      })
      .filter((entry) => entry.rate !== null && !entry.task.no_solution)
      .sort((a, b) => a.rate - b.rate)
      .slice(0, 10);
    if (!scored.length) return null;
    const keys = index.configurations.map((c) => c.key);
    return section(
      "Hardest tasks",
      table(
        [
          "task",
          "family",
          ...index.configurations.map((c) => c.name),
          h("th", { class: "num" }, "first exact"),
        ],
        scored.map(({ task, rate }) =>
          h(
            "tr",
            null,
            td(h("a", { href: route(["task", task.id]), class: "task-link" }, task.id), "id"),
            td(task.family, "wrap"),
            keys.map((key) => td(task.cells[key] ? outcomeLinks(key, task.cells[key], task.id) : "–")),
            td(fmtPct(rate), "num"),
          ),
        ),
      ),
      h("p", null, h("a", { href: route(["tasks"]) }, `All ${fmtCount(index.tasks.length)} tasks`)),
    );
  }

  function perConfiguration(index, pick, build) {
    const present = index.configurations.filter((c) => pick(c));
    if (!present.length) return null;
    return h(
      "div",
      { class: "grid" },
      present.map((config) =>
        h("div", { class: "card" }, h("h3", null, config.name), build(pick(config), config)),
      ),
    );
  }

  function integritySection(index) {
    const body = perConfiguration(
      index,
      (c) => c.integrity,
      (block) =>
        h(
          "div",
          null,
          facts([
            ["no-solution tasks", `${fmtCount(block.tasks_observed)} of ${fmtCount(block.tasks_declared)}`],
            ["scored trials", fmtCount(block.trials)],
          ]),
          table(
            [
              "bucket",
              h("th", { class: "num" }, "trials"),
              h("th", { class: "num" }, "share"),
              h("th", { class: "num" }, "tokens"),
              h("th", { class: "num" }, "cost"),
            ],
            Object.entries(block.buckets).map(([name, b]) =>
              h(
                "tr",
                null,
                td(name, "wrap"),
                td(fmtCount(b.count), "num"),
                td(fmtPct(b.share), "num"),
                td(fmtCount(b.tokens), "num"),
                td(fmtUsd(b.cost_usd), "num"),
              ),
            ),
          ),
          flatFacts({ verdicts: block.verdicts }),
        ),
    );
    return body ? section("Integrity", body) : null;
  }

  function evidenceSection(index) {
    const rows = [];
    for (const config of index.configurations) {
      for (const item of config.evidence) {
        const causes = Object.entries(item.causes)
          .map(([cause, n]) => `${cause} ×${n}`)
          .join(", ");
        rows.push(
          h(
            "tr",
            null,
            td(config.name, "wrap"),
            td(item.class, "wrap"),
            td(fmtCount(item.trials), "num"),
            td(causes || "–", "wrap"),
          ),
        );
      }
    }
    const classes = perConfiguration(
      index,
      (c) => (c.classes.length ? c.classes : null),
      (list) =>
        table(
          [
            "class",
            h("th", { class: "num" }, "tasks"),
            h("th", { class: "num" }, "trials"),
            h("th", { class: "num" }, "first"),
            h("th", { class: "num" }, "final"),
          ],
          list.map((row) =>
            h(
              "tr",
              null,
              td(
                h("a", { href: route(["tasks"], { family: row.category }) }, row.category || "(none)"),
                "wrap",
              ),
              td(fmtCount(row.tasks), "num"),
              td(fmtCount(row.trials), "num"),
              td(fmtPct(row.first_exact), "num"),
              td(fmtPct(row.final_exact), "num"),
            ),
          ),
        ),
    );
    const notes = perConfiguration(index, (c) => (c.notes.length ? c.notes : null), textLines);
    if (!rows.length && !classes && !notes) return null;
    return section(
      "Outcome classes",
      rows.length
        ? table(["configuration", "class", h("th", { class: "num" }, "trials"), "causes"], rows)
        : null,
      notes || (rows.length ? null : note("Every trial was scored.")),
      classes ? h("details", null, h("summary", null, "Task classes (families)"), classes) : null,
    );
  }

  function spendSection(index) {
    const rows = index.configurations.map((config) => {
      const s = config.summary;
      const tokens = s.tokens;
      const cost = s.cost_usd;
      const wall = s.wall_s;
      return h(
        "tr",
        null,
        td(config.name, "wrap"),
        td(fmtCount(tokens.total) + simulatedMark(config, "tokens"), "num"),
        td(fmtCount(tokens.mean), "num"),
        td(`${fmtCount(tokens.known)} / ${fmtCount(tokens.missing)}`, "num"),
        td(fmtUsd(cost.total) + simulatedMark(config, "cost_usd"), "num"),
        td(fmtUsd(s.cost_per_success), "num"),
        td(fmtSecs(wall.total) + simulatedMark(config, "wall_s"), "num"),
        td(fmtSecs(wall.mean), "num"),
      );
    });
    return section(
      "Spend",
      table(
        [
          "configuration",
          h("th", { class: "num" }, "tokens"),
          h("th", { class: "num" }, "per trial"),
          h("th", { class: "num" }, "known / missing"),
          h("th", { class: "num" }, "cost"),
          h("th", { class: "num" }, "per success"),
          h("th", { class: "num" }, "wall time"),
          h("th", { class: "num" }, "per trial"),
        ],
        rows,
      ),
    );
  }

  function trajectoryRows(block) {
    if (!block) return [];
    const per = (entry) => (entry && isNum(entry.per_trial) ? entry.per_trial : null);
    const rows = [
      ["requests", per(block.requests)],
      ["side requests", per(block.side_requests)],
      ["test runs", per(block.verification_runs)],
      ["files read", per(block.files_read)],
      ["files written", per(block.files_written)],
    ];
    for (const [kind, entry] of Object.entries(block.tool_calls))
      rows.push([`tool calls: ${kind}`, per(entry)]);
    const shares = block.time.shares || {}; // null: no trial knows all three times
    for (const [part, share] of Object.entries(shares))
      rows.push([`time share: ${part.replace(/_s$/, "")}`, share, "share"]);
    return rows;
  }

  function trajectoriesSection(index) {
    const body = perConfiguration(
      index,
      (c) => c.trajectories,
      (block) =>
        facts(
          trajectoryRows(block).map(([label, value, kind]) => [
            `${label}${kind ? "" : " per trial"}`,
            kind ? fmtPct(value) : fmtNumber(value),
          ]),
        ),
    );
    return body ? section("Trajectories", body) : null;
  }

  /** Each configuration's (each arm's) code measures: per figure, its median and how many
   * scored trials knew it (docs/measures.md); the figures are the block's, whatever they are. */
  function measuresSection(index) {
    const body = perConfiguration(
      index,
      (c) => c.measures,
      (block) => [
        note(`${fmtCount(block.trials)} measured scored trials`),
        table(
          ["figure", h("th", { class: "num" }, "median"), h("th", { class: "num" }, "trials")],
          Object.entries(block.figures).map(([name, figure]) =>
            h(
              "tr",
              { "data-figure": name },
              td(name, "wrap"),
              td(fmtNumber(figure.median), "num"),
              td(fmtCount(figure.trials), "num"),
            ),
          ),
        ),
      ],
    );
    return body ? section("Code measures", { class: "measures" }, body) : null;
  }

  /** Paired code measures, candidate − base: per figure the mean per-task difference of the
   * medians, its interval over tasks and how many tasks paired. */
  function pairedMeasuresTable(block) {
    return table(
      [
        "figure",
        h("th", { class: "num" }, "mean difference"),
        h("th", { class: "num" }, "tasks"),
      ],
      Object.entries(block.figures).map(([name, figure]) =>
        h(
          "tr",
          { "data-figure": name },
          td(name, "wrap"),
          td(
            withInterval(
              fmtSigned(figure.point),
              fmtInterval(figure.interval, fmtSigned) || (figure.tasks ? "too few tasks" : "no task pairs"),
            ),
            "num",
          ),
          td(fmtCount(figure.tasks), "num"),
        ),
      ),
    );
  }

  /** Lines the terminal report prints (evidence, metering), as the other reports word them. */
  function textLines(lines) {
    return h(
      "ul",
      { class: "lines" },
      lines.map((line) => h("li", null, line)),
    );
  }

  /** Several configurations' rollups (per model, route, agent, harness), as the terminal prints them. */
  function rollupsSection(index) {
    if (!index.rollups.length) return null;
    return section("Rollups", pre(index.rollups.join("\n"), "table-text"));
  }

  function meteringSection(index) {
    const body = perConfiguration(
      index,
      (c) => (c.metering_lines.length ? c.metering_lines : null),
      textLines,
    );
    return body ? section("Metering", body) : null;
  }

  function runsSection(index) {
    const body = perConfiguration(
      index,
      (c) => c.run,
      (run, config) =>
        h(
          "div",
          null,
          facts([
            ["agent", run.agent],
            ["model", run.model],
            ["reasoning", run.reasoning],
            ["repeats", run.repeats],
            ["sandbox", run.sandbox],
            ["started", run.started_at],
            ["finished", run.finished_at],
            ["harness", run.harness_version],
            ["sources", config.sources.join(", ")],
          ]),
          h("details", null, h("summary", null, "Everything recorded"), flatFacts(run, 200)),
        ),
    );
    return body ? section("Runs", body) : null;
  }

  // ---------------------------------------------------------------------------------------
  // Judges: the tally of `agentbench judge` per run directory (docs/judges.md), the reviewed trials

  const SEVERITIES = ["critical", "major", "minor"];

  /** A flag of the tally in a word or two, for the badge beside the judge's name. */
  function flagLabel(flag) {
    const text = String(flag);
    if (text.startsWith("position consistency")) return "position-inconsistent";
    if (text.startsWith("side-A rate")) return "position-biased";
    if (text.startsWith("gold accuracy")) return "below gold threshold";
    if (text.startsWith("gold pairs")) return "gold unanswered";
    return "flagged";
  }

  /** The configuration name a judged side stands for (its label when it is not in this view). */
  function sideName(index, entry, label) {
    const key = (entry.sides || {})[label];
    const config = key ? lookups(index).configs.get(key) : null;
    return config ? config.name : label;
  }

  /** The side a judge prefers: the best win rate over decided pairs, if it stands alone. */
  function preferredSide(judge, sides) {
    const rated = sides.filter((side) => isNum(judge.sides[side].win_rate));
    if (!rated.length) return null;
    const best = Math.max(...rated.map((side) => judge.sides[side].win_rate));
    const top = rated.filter((side) => judge.sides[side].win_rate === best);
    return top.length === 1 && best > 0.5 ? top[0] : null;
  }

  function judgeTable(index, entry, judge, sides) {
    const position = judge.position;
    const gold = judge.gold;
    const consistency = `${fmtPct(position.consistency)} of ${fmtCount(position.pairs)}`;
    const goldText = gold ? `${fmtPct(gold.accuracy)} of ${fmtCount(gold.answers)}` : "–";
    const preferred = preferredSide(judge, sides);
    const rows = sides.map((side) => {
      const s = judge.sides[side];
      const found = judge.findings[side] || {};
      const name = sideName(index, entry, side);
      return h(
        "tr",
        { "data-side": side, class: side === preferred ? "preferred" : null },
        td(side === preferred ? [name, " ", h("span", { class: "badge win" }, "preferred")] : name, "wrap"),
        td(fmtCount(s.pairs), "num"),
        td(`${fmtCount(s.wins)} / ${fmtCount(s.losses)} / ${fmtCount(s.ties)}`, "num"),
        td(withInterval(fmtPct(s.win_rate), fmtInterval(s.interval, fmtPct)), "num"),
        td(fmtP(s.p_value), "num"),
        td(consistency, "num"),
        td(goldText, "num"),
        td(SEVERITIES.map((sev) => fmtCount(found[sev] || 0)).join(" / "), "num"),
      );
    });
    return table(
      [
        "side",
        h("th", { class: "num" }, "pairs"),
        h("th", { class: "num", title: "wins / losses / ties over matched pairs" }, "W / L / T"),
        h("th", { class: "num" }, "win rate"),
        h("th", { class: "num" }, "sign p"),
        h("th", { class: "num", title: "pairs asked in both orders whose winner did not change" }, "position consistency"),
        h("th", { class: "num", title: "gold pairs: the reference preferred" }, "gold accuracy"),
        h("th", { class: "num" }, "findings (crit / major / minor)"),
      ],
      rows,
    );
  }

  function judgeNotes(judge) {
    const lines = [];
    const usage = judge.usage;
    lines.push(
      `${fmtCount(usage.calls)} calls · tokens ${isNum(usage.tokens) ? fmtCount(usage.tokens) : "unknown"}` +
        ` · cost ${isNum(usage.cost_usd) ? fmtUsd(usage.cost_usd) : "unknown"}` +
        ` · ${fmtCount(judge.judge_errors)} unparsed answers · ${fmtCount(judge.failed_calls)} failed calls`,
    );
    const bt = judge.bradley_terry;
    if (bt) {
      const shown = Object.entries(bt.strengths)
        .map(([side, v]) => `${side} ${fmtNumber(v.strength)} ${fmtInterval(v.interval, fmtNumber)}`)
        .join(", ");
      lines.push(`Bradley–Terry strengths over ${fmtCount(bt.pairs)} pairs: ${shown}`);
    }
    return lines.map(note);
  }

  /** One judge of one tally: its name and flags, then the table over SIDES. */
  function judgeCard(index, entry, judge, sides) {
    const flags = judge.flags || [];
    const preferred = preferredSide(judge, sides);
    return h(
      "div",
      { class: "card judge", "data-judge": judge.judge },
      h(
        "h3",
        null,
        judge.judge,
        " ",
        flags.map((flag) => h("span", { class: "badge flag", title: flag }, flagLabel(flag))),
      ),
      flags.map((flag) => h("p", { class: "warning flag-line" }, `FLAG: ${flag}`)),
      judgeTable(index, entry, judge, sides),
      note(
        preferred
          ? `Prefers ${sideName(index, entry, preferred)}: win rate ${fmtPct(judge.sides[preferred].win_rate)} ${fmtInterval(judge.sides[preferred].interval, fmtPct)}, sign p ${fmtP(judge.sides[preferred].p_value)}.`
          : "Prefers no side.",
      ),
      judgeNotes(judge),
    );
  }

  function tallyHead(entry) {
    const block = entry.block;
    const level = Math.round(block.level * 100);
    const lines = [
      `${block.sides.join(" vs ")}, ${block.which} pairs, from ${entry.run_dir}. ` +
        `Win rate over decided pairs with its ${level}% Wilson interval; sign p over decided pairs.`,
    ];
    if (block.missing) lines.push(`${fmtCount(block.missing)} of ${fmtCount(block.prompts)} prompts not answered yet.`);
    if (block.omitted.length) lines.push(`${fmtCount(block.omitted.length)} pairs left out (agentbench judge names them).`);
    for (const row of block.agreement) {
      lines.push(
        `Agreement ${row.judges.join(" / ")}: kappa ${fmtNumber(row.kappa)}, ${fmtPct(row.agreement)} equal over ${fmtCount(row.answers)} answers.`,
      );
    }
    return lines.map(note);
  }

  function judgementBlock(index, entry, sides) {
    if (entry.problem) return h("p", { class: "warning" }, `${entry.run_dir}: ${entry.problem}`);
    return h(
      "div",
      { class: "judgements" },
      tallyHead(entry),
      h("div", { class: "grid-judges" }, entry.block.judges.map((judge) => judgeCard(index, entry, judge, sides))),
    );
  }

  function reviewedTable(index) {
    const { configs } = lookups(index);
    return table(
      [
        "trial",
        "configuration",
        "judges",
        h("th", { class: "num" }, "findings (crit / major / minor)"),
        h("th", { class: "num" }, "failed reviews"),
      ],
      index.reviewed.map((r) =>
        h(
          "tr",
          null,
          td(h("a", { href: trialLink(r.key, r.index), class: "reviewed-link" }, `${r.task} · repeat ${r.repeat}`), "wrap"),
          td(configs.has(r.key) ? configs.get(r.key).name : r.key, "wrap"),
          td(r.judges.join(", "), "wrap"),
          td(SEVERITIES.map((sev) => fmtCount(r.findings[sev])).join(" / "), "num"),
          td(fmtCount(r.failed), "num"),
        ),
      ),
    );
  }

  function judgesSection(index) {
    const judged = index.judgements || [];
    const reviewed = index.reviewed || [];
    if (!judged.length && !reviewed.length) return null;
    return section(
      "Judges",
      { class: "judges", id: "judges" },
      judged.map((entry) => judgementBlock(index, entry, entry.block ? entry.block.sides : [])),
      reviewed.length ? [h("h3", null, "Reviewed trials"), reviewedTable(index)] : null,
    );
  }

  /** The tallies that judged both compared configurations, their rows cut to the two. */
  function compareJudges(index, base, candidate) {
    const shown = [];
    for (const entry of index.judgements || []) {
      if (!entry.block) continue;
      const labelOf = (key) => Object.keys(entry.sides || {}).find((label) => entry.sides[label] === key);
      const sides = [labelOf(base), labelOf(candidate)];
      if (sides.every(Boolean)) shown.push(judgementBlock(index, entry, sides));
    }
    return shown.length ? section("Judges", { class: "judges compare-judges", id: "judges" }, shown) : null;
  }

  /** A trial's reviews (`agentbench review`): each judge's findings, worst first. */
  function reviewsSection(reviews) {
    if (!reviews || !reviews.length) return null;
    return section(
      "Review findings",
      { class: "reviews", id: "reviews" },
      reviews.map((review) => {
        const findings = review.findings
          .slice()
          .sort((a, b) => SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity));
        return h(
          "div",
          { class: "card review" },
          h("h3", null, review.judge || "judge", review.at ? h("span", { class: "muted" }, ` · ${review.at}`) : null),
          review.error
            ? h("p", { class: "warning" }, `No review: ${review.error}`)
            : findings.length
              ? table(
                  ["severity", "where", "finding"],
                  findings.map((f) =>
                    h(
                      "tr",
                      { "data-severity": f.severity },
                      td(h("span", { class: `badge sev sev-${SEVERITIES.includes(f.severity) ? f.severity : "minor"}` }, String(f.severity))),
                      td(f.file ? `${f.file}${isNum(f.line) ? `:${f.line}` : ""}` : "–", "wrap"),
                      td(String(f.text ?? ""), "wrap"),
                    ),
                  ),
                )
              : note("No findings."),
        );
      }),
    );
  }

  // ---------------------------------------------------------------------------------------
  // Tasks: filtered in memory, rendered a page of rows at a time

  const TASK_FILTERS = ["family", "tag", "outcome", "class", "flaky", "changed", "q", "config", "sort"];
  let tasksShown = PAGE_ROWS;
  let tasksShownFor = "";

  function taskRecords(index, columns) {
    // Built once per index and trial columns: lowercased search text, letters, statuses.
    return index.tasks.map((task) => {
      const letters = new Set();
      const statuses = new Set();
      let flaky = false;
      for (const [key, cell] of Object.entries(task.cells)) {
        for (const letter of cell.outcomes) letters.add(letter);
        flaky ||= cell.flaky;
        const status = columns.has(key) ? columns.get(key).status : null; // null: trials/<C> failed to load
        if (status) for (const t of cell.trials) statuses.add(status[t]);
      }
      return {
        task,
        search: `${task.id}\n${task.prompt || ""}`.toLowerCase(),
        tags: new Set(task.tags),
        letters,
        statuses,
        flaky,
      };
    });
  }

  function filterTasks(records, f) {
    const needle = (f.q || "").toLowerCase();
    return records.filter(
      (r) =>
        (!f.family || r.task.family === f.family) &&
        (!f.tag || r.tags.has(f.tag)) &&
        (!f.outcome ||
          (f.config
            ? (r.task.cells[f.config] || { outcomes: "" }).outcomes.includes(f.outcome)
            : r.letters.has(f.outcome))) &&
        (!f.class || r.statuses.has(f.class)) &&
        (!f.flaky || r.flaky) &&
        (!f.changed || r.task.changed) &&
        (!f.config || r.task.cells[f.config]) &&
        (!needle || r.search.includes(needle)),
    );
  }

  function sortTasks(list, sort) {
    if (!sort) return list;
    const desc = sort.startsWith("-");
    const field = desc ? sort.slice(1) : sort;
    const value = (r) => {
      if (field === "id") return r.task.id;
      if (field === "family") return r.task.family;
      const cell = r.task.cells[field];
      return cell && isNum(cell.first_exact) ? cell.first_exact : -1;
    };
    const sign = desc ? -1 : 1;
    return [...list].sort((a, b) => {
      const x = value(a);
      const y = value(b);
      return (x < y ? -1 : x > y ? 1 : 0) * sign;
    });
  }

  function readFilters(query) {
    return Object.fromEntries(TASK_FILTERS.map((name) => [name, query.get(name) || ""]));
  }

  const recordCache = new WeakMap();

  async function tasksPage(ctx) {
    const index = await ctx.need("index");
    const columns = new Map();
    const loaded = await Promise.allSettled(index.configurations.map((c) => ctx.need(`trials/${c.key}`)));
    loaded.forEach((result, i) => {
      if (result.status === "fulfilled") columns.set(index.configurations[i].key, result.value);
    });
    if (!recordCache.has(index)) recordCache.set(index, taskRecords(index, columns));
    const records = recordCache.get(index);
    const filters = readFilters(ctx.route.query);
    const body = h("div");
    const update = () => {
      replaceQuery(filters);
      renderTaskTable(body, index, records, filters);
    };
    const node = h("div", null, h("h1", null, "Tasks"), taskFilterBar(index, records, filters, update), body);
    renderTaskTable(body, index, records, filters);
    return { title: "Tasks", node };
  }

  function options(values, selected, anyLabel) {
    return [
      h("option", { value: "" }, anyLabel),
      ...values.map((v) => h("option", { value: v, selected: v === selected }, v)),
    ];
  }

  function taskFilterBar(index, records, filters, update) {
    const families = [...new Set(index.tasks.map((t) => t.family))].filter(Boolean).sort();
    const tags = [...new Set(index.tasks.flatMap((t) => t.tags))].sort();
    const classes = [...new Set(records.flatMap((r) => [...r.statuses]))].sort();
    const select = (name, label, values, anyLabel, labels) => {
      const el = h(
        "select",
        {
          id: `filter-${name}`,
          name,
          onchange: () => {
            filters[name] = el.value;
            update();
          },
        },
        options(values, filters[name], anyLabel),
      );
      if (labels)
        for (const option of el.options)
          if (labels[option.value]) option.textContent = `${option.value}: ${labels[option.value]}`;
      return h("label", null, label, el);
    };
    const check = (name, label) => {
      const el = h("input", {
        type: "checkbox",
        id: `filter-${name}`,
        checked: filters[name] === "1",
        onchange: () => {
          filters[name] = el.checked ? "1" : "";
          update();
        },
      });
      return h("label", null, el, label);
    };
    let typing = null;
    const search = h("input", {
      type: "search",
      id: "search",
      placeholder: "search ids and prompts  ( / )",
      value: filters.q,
      "aria-label": "search task ids and prompts",
      oninput: () => {
        clearTimeout(typing);
        typing = setTimeout(() => {
          filters.q = search.value;
          update();
        }, 120);
      },
    });
    const configs = index.configurations.map((c) => c.key);
    const configLabels = Object.fromEntries(index.configurations.map((c) => [c.key, c.name]));
    return h(
      "div",
      { class: "filters" },
      search,
      select("family", "family", families, "any"),
      select("tag", "tag", tags, "any"),
      select("outcome", "outcome", Object.keys(LETTERS), "any", LETTERS),
      select("class", "class", classes, "any"),
      configs.length > 1 ? select("config", "in", configs, "any configuration", configLabels) : null,
      check("flaky", "flaky"),
      configs.length > 1 ? check("changed", "changed between configurations") : null,
      h(
        "button",
        {
          type: "button",
          onclick: () => {
            for (const name of TASK_FILTERS) filters[name] = "";
            location.hash = route(["tasks"]);
          },
        },
        "clear",
      ),
    );
  }

  function renderTaskTable(body, index, records, filters) {
    const matched = sortTasks(filterTasks(records, filters), filters.sort);
    const signature = JSON.stringify(filters);
    if (signature !== tasksShownFor) {
      tasksShown = PAGE_ROWS;
      tasksShownFor = signature;
    }
    trialList = matched.flatMap((r) =>
      index.configurations.flatMap((c) =>
        r.task.cells[c.key] ? r.task.cells[c.key].trials.map((t) => `${c.key}/${t}`) : [],
      ),
    );
    const configs = index.configurations.filter((c) => !filters.config || c.key === filters.config);
    const sortHeader = (field, label, cls) => {
      const current =
        filters.sort === field ? "sorted-asc" : filters.sort === `-${field}` ? "sorted-desc" : "";
      return h(
        "th",
        {
          class: `sortable ${current} ${cls || ""}`,
          title: "sort",
          onclick: () => {
            filters.sort = filters.sort === field ? `-${field}` : filters.sort === `-${field}` ? "" : field;
            replaceQuery(filters);
            renderTaskTable(body, index, records, filters);
          },
        },
        label,
      );
    };
    const rows = matched.slice(0, tasksShown).map((r) => taskRow(r.task, configs));
    const more = h(
      "button",
      {
        type: "button",
        id: "show-more",
        disabled: tasksShown >= matched.length,
        onclick: () => {
          tasksShown += PAGE_ROWS;
          renderTaskTable(body, index, records, filters);
        },
      },
      `show ${PAGE_ROWS} more`,
    );
    fill(
      body,
      h(
        "p",
        { class: "note", id: "task-count" },
        `${fmtCount(Math.min(tasksShown, matched.length))} of ${fmtCount(matched.length)} matching tasks (${fmtCount(index.tasks.length)} in all)`,
      ),
      table(
        [
          sortHeader("id", "task"),
          sortHeader("family", "family"),
          h("th", null, "tags"),
          ...configs.map((c) => sortHeader(c.key, c.name)),
          h("th", null, "changed"),
        ],
        rows,
      ),
      matched.length > tasksShown
        ? h("div", { class: "pager" }, more, note(`${fmtCount(matched.length - tasksShown)} more`))
        : null,
    );
  }

  function taskRow(task, configs) {
    return h(
      "tr",
      null,
      td(h("a", { href: route(["task", task.id]), class: "task-link" }, task.id), "id"),
      td(task.family, "wrap"),
      td(
        task.tags.map((tag) => h("span", { class: "badge" }, tag)),
        "wrap",
      ),
      configs.map((c) => {
        const cell = task.cells[c.key];
        return td(
          cell
            ? [
                h("span", { class: "muted rate" }, fmtPct(cell.first_exact)),
                " ",
                outcomeLinks(c.key, cell, task.id),
              ]
            : "–",
          "outcome-cell",
        );
      }),
      td(task.changed ? "changed" : ""),
    );
  }

  // ---------------------------------------------------------------------------------------
  // One task: its trials in every configuration

  async function taskPage(ctx) {
    const index = await ctx.need("index");
    const task = lookups(index).tasks.get(ctx.route.id);
    if (!task)
      return { title: "Not found", node: errorNode(new Error(`no task ${ctx.route.id} in this view`)) };
    const keys = index.configurations.map((c) => c.key).filter((key) => task.cells[key]);
    const columns = await Promise.allSettled(keys.map((key) => ctx.need(`trials/${key}`)));
    trialList = keys.flatMap((key) => task.cells[key].trials.map((t) => `${key}/${t}`));
    const node = h(
      "div",
      null,
      h("p", null, h("a", { href: "#/tasks" }, "← tasks")),
      h("h1", null, task.id),
      facts([
        ["family", task.family || "–"],
        ["tags", task.tags.join(", ") || "–"],
        ["no solution", task.no_solution ? "yes: scored on integrity" : null],
        ["changed", task.changed ? "outcomes differ between configurations" : null],
      ]),
      task.prompt
        ? h(
            "div",
            null,
            h("h2", null, "Prompt"),
            pre(task.prompt),
            task.prompt.length >= PROMPT_PREVIEW ? note("The prompt's start; a trial shows it whole.") : null,
          )
        : null,
      keys.map((key, i) =>
        taskTrials(index, task, key, columns[i].status === "fulfilled" ? columns[i].value : null),
      ),
    );
    return { title: task.id, node };
  }

  function taskTrials(index, task, key, cols) {
    const cell = task.cells[key];
    const get = (name, t) => (cols ? cols[name][t] : null); // null: trials/<C> failed to load
    return section(
      `${lookups(index).configs.get(key).name}: ${fmtPct(cell.first_exact)} first exact`,
      table(
        [
          "trial",
          "repeat",
          "status",
          h("th", { class: "num" }, "tokens"),
          h("th", { class: "num" }, "cost"),
          h("th", { class: "num" }, "wall"),
          h("th", { class: "num" }, "requests"),
          h("th", { class: "num" }, "tool calls"),
          h("th", { class: "num" }, "steps"),
        ],
        cell.trials.map((t, i) =>
          h(
            "tr",
            null,
            td(outcomeLink(key, t, cell.outcomes[i], task.id)),
            td(String(get("repeat", t) ?? "–")),
            td(String(get("status", t) ?? "–")),
            td(fmtCount(get("tokens", t)), "num"),
            td(fmtUsd(get("cost_usd", t)), "num"),
            td(fmtSecs(get("wall_s", t)), "num"),
            td(fmtCount(get("requests", t)), "num"),
            td(fmtCount(get("tool_calls", t)), "num"),
            td(fmtCount(get("steps", t)), "num"),
          ),
        ),
      ),
    );
  }

  // ---------------------------------------------------------------------------------------
  // One trial

  async function trialPage(ctx) {
    const index = await ctx.need("index");
    const { key } = ctx.route;
    const i = validTrial(index, key, ctx.route.index);
    if (i === null)
      return {
        title: "Not found",
        node: errorNode(new Error(`no trial ${ctx.route.index} of configuration ${key} in this view`)),
      };
    const trial = await ctx.need(`trial/${key}/${i}`);
    const node = h(
      "div",
      null,
      trialHeader(index, trial, key, i),
      trial.prompt ? h("details", { open: true }, h("summary", null, "Prompt"), pre(trial.prompt)) : null,
      roundsSection(trial.rounds),
      stepsSection(ctx, trial),
      trial.failure
        ? section(
            "Against the expected tree",
            diffView(trial.failure),
            note("Invisible characters shown as the terminal does."),
          )
        : null,
      trial.diff ? section("Diff against the input", diffView(trial.diff)) : null,
      reviewsSection(trial.reviews),
      trial.verifier ? section("Verifier", pre(trial.verifier)) : null,
      trial.infrastructure
        ? section(
            "Infrastructure",
            pre(trial.infrastructure),
          )
        : null,
      trial.treatment
        ? section("Treatment receipt", pre(trial.treatment))
        : null,
      outputsSection(trial),
      requestsSection(trial.requests),
      artifactsSection(trial.artifacts),
      h(
        "details",
        null,
        h("summary", null, "Observation as recorded"),
        pre(JSON.stringify(trial.observation, null, 2)),
      ),
    );
    return { title: `${trial.task} r${trial.repeat}`, node };
  }

  function neighbours(key, i, count) {
    const here = trialList.indexOf(`${key}/${i}`);
    if (here >= 0) {
      const split = (entry) => (entry ? entry.split("/") : null);
      return {
        prev: split(trialList[here - 1]),
        next: split(trialList[here + 1]),
        where: `${here + 1} of ${trialList.length} in the list`,
      };
    }
    return {
      prev: i > 0 ? [key, i - 1] : null,
      next: i + 1 < count ? [key, i + 1] : null,
      where: `${i + 1} of ${count} in ${key}`,
    };
  }

  function trialHeader(index, trial, key, i) {
    const config = lookups(index).configs.get(key);
    const near = neighbours(key, i, config.trials);
    const step = (target, label, rel) =>
      target
        ? h("a", { href: trialLink(target[0], target[1]), rel, id: `trial-${rel}` }, label)
        : h("span", { class: "muted" }, label);
    return h(
      "div",
      null,
      h(
        "div",
        { class: "trial-nav" },
        h("a", { href: route(["task", trial.task]) }, "← task"),
        step(near.prev, "← previous (k)", "prev"),
        step(near.next, "next (j) →", "next"),
        h("span", { class: "muted" }, near.where),
      ),
      h("h1", null, outcomeBadge(trial.outcome), " ", trial.task, ` · repeat ${trial.repeat}`),
      facts([
        ["configuration", config.name],
        ["arm", trial.arm],
        ["status", trial.status],
        ["outcome", LETTERS[trial.outcome]],
        ["verdict", verdictText(trial.observation)],
        ["folder", trial.folder],
      ]),
      copyRow("node id", trial.nodeid),
      copyRow("rerun", trial.rerun),
    );
  }

  /** The agent's own verdict on a no-solution task (done, partial, incomplete) and its reason. */
  function verdictText(observation) {
    if (!observation.verdict) return null;
    return observation.verdict_reason
      ? `${observation.verdict}: ${observation.verdict_reason}`
      : String(observation.verdict);
  }

  function copyRow(label, text) {
    if (!text) return null;
    const code = h("code", null, text);
    const said = h("span", { class: "copied", "aria-live": "polite" });
    const button = h(
      "button",
      {
        type: "button",
        class: "copy",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(text);
            said.textContent = "copied";
          } catch {
            // No clipboard here (file://, no focus): select the text for Ctrl+C instead.
            const range = document.createRange();
            range.selectNodeContents(code);
            const selection = window.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
            said.textContent = "selected: press Ctrl+C";
          }
        },
      },
      "copy",
    );
    return h("div", { class: "copy-row" }, h("span", { class: "muted" }, label), code, button, said);
  }

  function roundsSection(rounds) {
    if (!rounds.length) return null;
    const list = (names) => (Array.isArray(names) && names.length ? names.join(", ") : "");
    return section(
      "Rounds",
      table(
        [
          "attempt",
          "round",
          h("th", { class: "num" }, "exit"),
          "timed out",
          h("th", { class: "num" }, "wall"),
          "exact",
          "differing",
          "missing",
          "unexpected",
          "invalid",
        ],
        rounds.map((r) =>
          h(
            "tr",
            null,
            td(String(r.attempt)),
            td(String(r.round)),
            td(String(r.exit_code ?? "–"), "num"),
            td(r.timed_out ? "yes" : "no"),
            td(fmtSecs(r.wall_s), "num"),
            td(r.exact ? "yes" : "no"),
            td(list(r.differing), "wrap"),
            td(list(r.missing), "wrap"),
            td(list(r.unexpected), "wrap"),
            td(list(r.invalid), "wrap"),
          ),
        ),
      ),
    );
  }

  /** A step's token counts as text ("" when it has none). */
  function stepTokens(step) {
    if (!step.tokens) return "";
    return Object.entries(step.tokens)
      .filter(([, v]) => isNum(v))
      .map(([k, v]) => `${k} ${fmtCount(v)}`)
      .join(" · ");
  }

  function stepSummary(step) {
    const calls = step.tool_calls;
    if (calls.length) return calls.map((c) => c.name || c.kind).join(", ");
    const text = String(step.message || step.reasoning || "").replace(/\s+/g, " ");
    // A model turn with neither text nor calls still has its tokens to show.
    return text.slice(0, 80) || stepTokens(step) || "(empty)";
  }

  function stepsSection(ctx, trial) {
    const { steps } = trial;
    stepper = null;
    if (!steps.length) return section("Trajectory", note("No trajectory was recorded for this trial."));
    const query = ctx.route.query;
    let shown = Math.min(Math.max(Number(query.get("step")) || 1, 1), steps.length);
    const detail = h("div", { class: "step-detail", id: "step-detail" });
    const buttons = steps.map((step, n) =>
      h(
        "button",
        {
          type: "button",
          class: "step-button",
          onclick: () => show(n + 1),
        },
        h("span", { class: "step-source" }, `${n + 1}. ${step.source}`),
        stepSummary(step),
      ),
    );
    const show = (n) => {
      shown = Math.min(Math.max(n, 1), steps.length);
      buttons.forEach((b, j) =>
        j + 1 === shown ? b.setAttribute("aria-current", "step") : b.removeAttribute("aria-current"),
      );
      detail.replaceChildren(stepDetail(steps[shown - 1], shown, steps.length, show));
      scrollWithin(list, buttons[shown - 1]);
      replaceQuery({ step: shown > 1 ? shown : "" });
    };
    const list = h(
      "ol",
      { class: "step-list", id: "step-list" },
      buttons.map((b) => h("li", null, b)),
    );
    stepper = { next: () => show(shown + 1), prev: () => show(shown - 1) };
    ctx.later(() => show(shown));
    return section(
      `Trajectory: ${steps.length} steps`,
      trial.steps_cut ? note(`${fmtCount(trial.steps_cut)} more steps were left out.`) : null,
      h("div", { class: "stepper" }, list, detail),
    );
  }
  let stepper = null; // the trial page's step controls, for n / p

  /** Bring an item of a scrolling list into view without scrolling the page itself. */
  function scrollWithin(container, item) {
    const top = item.offsetTop; // the container is positioned, so this is relative to it
    if (top < container.scrollTop) container.scrollTop = top;
    else if (top + item.offsetHeight > container.scrollTop + container.clientHeight) {
      container.scrollTop = top + item.offsetHeight - container.clientHeight;
    }
  }

  function stepDetail(step, n, count, show) {
    return h(
      "div",
      null,
      h(
        "div",
        { class: "step-nav" },
        h(
          "button",
          { type: "button", id: "step-prev", disabled: n <= 1, onclick: () => show(n - 1) },
          "← step (p)",
        ),
        h(
          "button",
          { type: "button", id: "step-next", disabled: n >= count, onclick: () => show(n + 1) },
          "step (n) →",
        ),
        h("strong", { id: "step-title" }, `Step ${n} of ${count}`),
        h(
          "span",
          { class: "muted" },
          `${step.source} · attempt ${step.attempt ?? 0}, round ${step.round ?? 0}${step.side ? " · side request" : ""}`,
        ),
      ),
      facts([
        ["tokens", stepTokens(step)],
        ["latency", isNum(step.latency_s) ? fmtSecs(step.latency_s) : null],
      ]),
      step.message ? pre(step.message, "message") : null,
      step.reasoning ? h("details", null, h("summary", null, "Reasoning"), pre(step.reasoning)) : null,
      step.tool_calls.map(toolCall),
    );
  }

  function toolCall(call) {
    const args = call.arguments; // text (trial_detail._shown), or null
    return h(
      "div",
      { class: "tool-call" },
      h(
        "div",
        null,
        h("strong", null, String(call.name ?? "")),
        " ",
        h("span", { class: "badge" }, String(call.kind ?? "other")),
        call.exit_code !== null && call.exit_code !== undefined
          ? h("span", { class: "badge" }, `exit ${call.exit_code}`)
          : null,
      ),
      args !== null ? pre(args, "arguments") : null,
      call.result !== null
        ? h(
            "details",
            { open: String(call.result).length < 2000 },
            h("summary", null, "result"),
            pre(call.result, "result"),
          )
        : note("no result recorded"),
    );
  }

  function diffView(text) {
    const block = h("pre", { class: "diff" });
    for (const line of String(text).split("\n")) {
      const cls = /^(\+\+\+|---) /.test(line)
        ? "file"
        : line.startsWith("@@")
          ? "hunk"
          : line.startsWith("+")
            ? "add"
            : line.startsWith("-")
              ? "del"
              : null;
      block.append(cls ? h("span", { class: cls }, line) : `${line}\n`);
    }
    return block;
  }

  function outputsSection(trial) {
    const parts = [
      ["final message", trial.final_message],
      ["stdout", trial.stdout],
      ["stderr", trial.stderr],
    ].filter(([, text]) => text);
    if (!parts.length) return null;
    return section(
      "Agent output",
      parts.map(([label, text]) => h("details", null, h("summary", null, label), pre(text))),
    );
  }

  /** A metered request as the meter records it (meter/server.py RequestRecord): usage is null
   * when the response said nothing of it, status when no answer came. */
  function requestRow(r) {
    const usage = r.usage || {};
    const fault = [r.injected && `injected ${r.injected}`, r.failure].filter(Boolean).join("; ");
    return h(
      "tr",
      null,
      td(String(r.index + 1), "num"),
      td(`${r.attempt}/${r.round}`, "num"),
      td(r.path, "wrap"),
      td(String(r.status ?? "–"), "num"),
      td(fmtCount(usage.input), "num"),
      td(fmtCount(usage.cached_input), "num"),
      td(fmtCount(usage.output), "num"),
      td(fmtSecs(r.latency_s), "num"),
      td(fmtSecs(r.duration_s), "num"),
      td(fault, "wrap"),
    );
  }

  function requestsSection(requests) {
    if (!requests.length) return null;
    const num = (label, title) => h("th", { class: "num", title }, label);
    return section(
      "Metered requests",
      table(
        [
          num("#"),
          num("attempt/round"),
          "path",
          num("status"),
          num("input"),
          num("cached"),
          num("output"),
          num("latency", "to the response's headers"),
          num("duration", "to the response's last byte"),
          "fault",
        ],
        requests.map(requestRow),
      ),
    );
  }

  function artifactsSection(artifacts) {
    if (!artifacts.length) return null;
    return section(
      "Artifacts",
      table(
        ["name", h("th", { class: "num" }, "bytes")],
        artifacts.map((a) => h("tr", null, td(a.name, "wrap"), td(fmtCount(a.size), "num"))),
      ),
      note("Files kept in the trial's directory of the run."),
    );
  }

  // ---------------------------------------------------------------------------------------
  // Compare two configurations

  // The suite's metrics: these are compared as a ratio, the others (first_exact, final_exact,
  // quality) as a difference of rates.
  const RATIO_METRICS = new Set(["tokens", "cost_usd", "wall_s"]);

  function listedPair(index, base, candidate) {
    return index.pairs.some(([a, b]) => a === base && b === candidate);
  }

  function metricKind(metric) {
    return RATIO_METRICS.has(metric) ? "ratio" : "rate";
  }

  function summaryFigure(summary, metric) {
    const value = summary[metric];
    return value && typeof value === "object" ? value.mean : value;
  }

  /**
   * The comparison as the page draws it: the compare command's document (under `comparison`)
   * with McNemar's trial pairs per outcome beside it.
   */
  function comparisonView(data, index) {
    const { base, candidate } = data;
    const configs = lookups(index).configs;
    const view = {
      base,
      candidate,
      baseName: data.base_name,
      candidateName: data.candidate_name,
      problems: data.problems,
      differences: [],
      metrics: [],
      mcnemar: {},
      tasks: [],
      trajectories: {
        base: configs.get(base).trajectories,
        candidate: configs.get(candidate).trajectories,
        differences: {},
      },
    };
    const outcomes = (id, key) => {
      const task = lookups(index).tasks.get(id);
      return task.cells[key] ? task.cells[key].outcomes : "";
    };
    const doc = data.comparison;
    if (!doc) return view; // the two could not be paired: data.problems says why
    const baseSummary = configs.get(base).summary;
    const candidateSummary = configs.get(candidate).summary;
    view.metrics = Object.entries(doc.suite).map(([metric, entry]) => ({
      metric,
      kind: metricKind(metric),
      base: summaryFigure(baseSummary, metric),
      candidate: summaryFigure(candidateSummary, metric),
      difference: entry.point,
      ci: entry.interval,
      p: entry.sign_test_p,
      tasks: entry.pairs,
      note: entry.note,
    }));
    view.differences = Object.entries(doc.differences).map(
      ([field, pair]) => `${field}: ${pair.base ?? "none"} → ${pair.candidate ?? "none"}`,
    );
    view.mcnemar = data.mcnemar;
    view.tasks = doc.tasks.map((t) => ({
      id: t.id,
      base: outcomes(t.id, base),
      candidate: outcomes(t.id, candidate),
      difference: t.first_exact,
      ratio: t.tokens_ratio,
    }));
    view.trajectories.differences = doc.trajectories;
    view.measures = doc.measures || null;
    return view;
  }

  async function comparePage(ctx) {
    const index = await ctx.need("index");
    let { base, candidate } = ctx.route;
    if (!base) {
      const [first] = index.pairs;
      if (!first)
        return {
          title: "Compare",
          node: h(
            "div",
            null,
            h("h1", null, "Compare"),
            note("This view has a single configuration: nothing to compare."),
          ),
        };
      [base, candidate] = first;
      history.replaceState(null, "", route(["compare", base, candidate])); // a link to this pair
    }
    const picker = comparePicker(index, base, candidate);
    if (!listedPair(index, base, candidate)) {
      return {
        title: "Compare",
        node: h(
          "div",
          null,
          h("h1", null, "Compare"),
          picker,
          note("This view has no comparison of these two configurations."),
        ),
      };
    }
    const view = comparisonView(await ctx.need(`compare/${base}/${candidate}`), index);
    const node = h(
      "div",
      null,
      h("h1", null, `${view.candidateName} against ${view.baseName}`),
      picker,
      view.problems.map((problem) => h("p", { class: "warning" }, problem)),
      view.differences.length ? note(`What differs between the two: ${view.differences.join("; ")}`) : null,
      metricsSection(view),
      mcnemarSection(view),
      compareTrajectories(ctx, view),
      compareMeasures(view),
      compareJudges(index, base, candidate),
      compareTasks(view),
    );
    return { title: "Compare", node };
  }

  function comparePicker(index, base, candidate) {
    const choose = (id, current) =>
      h(
        "select",
        { id },
        index.configurations.map((c) => h("option", { value: c.key, selected: c.key === current }, c.name)),
      );
    const baseSelect = choose("compare-base", base);
    const candidateSelect = choose("compare-candidate", candidate);
    const go = () => {
      location.hash = route(["compare", baseSelect.value, candidateSelect.value]);
    };
    baseSelect.addEventListener("change", go);
    candidateSelect.addEventListener("change", go);
    return h(
      "div",
      { class: "compare-pick filters" },
      h("label", null, "base", baseSelect),
      h("label", null, "candidate", candidateSelect),
      h(
        "button",
        {
          type: "button",
          onclick: () => {
            location.hash = route(["compare", candidateSelect.value, baseSelect.value]);
          },
        },
        "swap",
      ),
    );
  }

  const KIND_FORMATS = {
    rate: { value: fmtPct, difference: fmtPts },
    ratio: { value: fmtNumber, difference: (x) => (isNum(x) ? `×${x.toFixed(3)}` : "–") },
  };

  function metricsSection(view) {
    const rows = view.metrics.map((m) => {
      const fmt = KIND_FORMATS[m.kind];
      return h(
        "tr",
        null,
        td(String(m.metric), "wrap"),
        td(fmt.value(m.base), "num"),
        td(fmt.value(m.candidate), "num"),
        td(fmt.difference(m.difference), "num"),
        td(h("span", { class: "interval" }, fmtInterval(m.ci, fmt.difference)), "num"),
        td(fmtP(m.p), "num"),
        td(fmtCount(m.tasks), "num"),
        td(m.note || "", "wrap"),
      );
    });
    return section(
      "Paired metrics",
      table(
        [
          "metric",
          h("th", { class: "num" }, "base"),
          h("th", { class: "num" }, "candidate"),
          h("th", { class: "num" }, "difference"),
          h("th", { class: "num" }, "interval"),
          h("th", { class: "num" }, "sign p"),
          h("th", { class: "num" }, "tasks"),
          "note",
        ],
        rows,
      ),
      note(
        "Rates: the mean per-task difference, candidate − base; tokens, cost and time: the ratio candidate / base. Bootstrap intervals over tasks; p from the exact sign test.",
      ),
    );
  }

  function mcnemarSection(view) {
    const outcomes = Object.keys(view.mcnemar);
    if (!outcomes.length) return null;
    return section(
      "Trials paired",
      h(
        "div",
        { class: "grid" },
        outcomes.map((outcome) => mcnemarTable(view, outcome)),
      ),
      note(
        "Each trial of the base paired with the candidate's trial of the same task and repeat; McNemar's exact test on the two discordant cells. Each count lists its trials.",
      ),
    );
  }

  function mcnemarTable(view, outcome) {
    const { cells, p } = view.mcnemar[outcome];
    const cell = (name) =>
      h(
        "td",
        { class: "cell" },
        h(
          "a",
          {
            href: route(["compare", view.base, view.candidate, "cell", name], { outcome }),
            id: `mcnemar-${outcome}-${name}`,
          },
          fmtCount(cells[name].length),
        ),
      );
    return h(
      "div",
      null,
      h("h3", null, `${outcome.replace(/_/g, " ")}: McNemar p = ${fmtP(p)}`),
      tableBox(
        h(
          "table",
          { class: "mcnemar" },
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              h("th", null, ""),
              h("th", null, `${view.candidateName} exact`),
              h("th", null, `${view.candidateName} not`),
            ),
          ),
          h(
            "tbody",
            null,
            h("tr", null, h("th", null, `${view.baseName} exact`), cell("both"), cell("base_only")),
            h("tr", null, h("th", null, `${view.baseName} not`), cell("candidate_only"), cell("neither")),
          ),
        ),
      ),
    );
  }

  function compareTrajectories(ctx, view) {
    const t = view.trajectories;
    if (!t.base && !t.candidate) return null;
    const baseRows = new Map(trajectoryRows(t.base).map((row) => [row[0], row]));
    const candidateRows = new Map(trajectoryRows(t.candidate).map((row) => [row[0], row]));
    const labels = [...new Set([...baseRows.keys(), ...candidateRows.keys()])];
    const shown = (row) => (row ? (row[2] ? fmtPct(row[1]) : fmtNumber(row[1])) : "–");
    const isShare = (label) => (baseRows.get(label) || candidateRows.get(label))[2];
    const chart = chartBox("trajectory figures per trial, side by side", "tall");
    ctx.later(() => {
      const perTrial = labels.filter((label) => !isShare(label));
      const series = (rows) => perTrial.map((label) => (rows.get(label) || [])[1] ?? null);
      makeChart(chart.canvas, {
        type: "bar",
        data: {
          labels: perTrial,
          datasets: [
            { label: view.baseName, backgroundColor: seriesColour(0), data: series(baseRows) },
            { label: view.candidateName, backgroundColor: seriesColour(1), data: series(candidateRows) },
          ],
        },
        options: { indexAxis: "y", scales: { x: { title: { display: true, text: "per trial" } } } },
      });
    });
    const differences = Object.entries(t.differences).filter(([, d]) => d && isNum(d.mean_difference));
    return section(
      "Trajectories side by side",
      h(
        "div",
        { class: "grid-2" },
        table(
          ["figure", h("th", { class: "num" }, view.baseName), h("th", { class: "num" }, view.candidateName)],
          labels.map((label) =>
            h(
              "tr",
              null,
              td(`${label}${isShare(label) ? "" : " per trial"}`, "wrap"),
              td(shown(baseRows.get(label)), "num"),
              td(shown(candidateRows.get(label)), "num"),
            ),
          ),
        ),
        h("div", { class: "card" }, chart.box),
      ),
      differences.length
        ? note(
            `Paired per task, candidate − base: ${differences
              .map(([name, d]) => `${name} ${fmtSigned(d.mean_difference)} (${fmtCount(d.tasks)} tasks)`)
              .join(", ")}.`,
          )
        : null,
    );
  }

  function compareMeasures(view) {
    if (!view.measures) return null;
    return section(
      "Code measures, candidate − base",
      { class: "compare-measures" },
      note(
        `Mean over ${fmtCount(view.measures.tasks)} paired tasks of the candidate's median minus the base's, over scored trials; the interval is over tasks.`,
      ),
      pairedMeasuresTable(view.measures),
    );
  }

  function compareTasks(view) {
    const all = view.tasks;
    const body = h("div");
    let changedOnly = all.some((t) => t.base !== t.candidate);
    let shown = PAGE_ROWS;
    const draw = () => {
      const list = (changedOnly ? all.filter((t) => t.base !== t.candidate) : all)
        .slice()
        .sort((a, b) => (a.difference ?? 0) - (b.difference ?? 0));
      fill(
        body,
        note(
          `${fmtCount(Math.min(shown, list.length))} of ${fmtCount(list.length)} tasks, largest loss first`,
        ),
        table(
          [
            "task",
            view.baseName,
            view.candidateName,
            h("th", { class: "num" }, "first exact"),
            h("th", { class: "num" }, "tokens"),
          ],
          list
            .slice(0, shown)
            .map((t) =>
              h(
                "tr",
                null,
                td(h("a", { href: route(["task", t.id]) }, t.id), "id"),
                td(h("span", { class: "outcomes" }, [...t.base].map(outcomeBadge))),
                td(h("span", { class: "outcomes" }, [...t.candidate].map(outcomeBadge))),
                td(fmtPts(t.difference), "num"),
                td(isNum(t.ratio) ? `×${t.ratio.toFixed(2)}` : "–", "num"),
              ),
            ),
        ),
        list.length > shown
          ? morePager(() => {
              shown += PAGE_ROWS;
              draw();
            })
          : null,
      );
    };
    const toggle = h("input", {
      type: "checkbox",
      id: "compare-changed",
      checked: changedOnly,
      onchange: () => {
        changedOnly = toggle.checked;
        shown = PAGE_ROWS;
        draw();
      },
    });
    draw();
    return section("Per task", h("label", null, toggle, " only tasks whose outcomes differ"), body);
  }

  /** The "show more" button under a long table: ONMORE shows the next PAGE_ROWS rows. */
  function morePager(onMore) {
    return h(
      "div",
      { class: "pager" },
      h("button", { type: "button", onclick: onMore }, `show ${PAGE_ROWS} more`),
    );
  }

  async function cellPage(ctx) {
    const index = await ctx.need("index");
    const { base, candidate, cell } = ctx.route;
    if (!listedPair(index, base, candidate) || !MCNEMAR_CELLS[cell]) {
      return { title: "Not found", node: errorNode(new Error("no such comparison cell in this view")) };
    }
    const [data, baseCols, candidateCols] = await Promise.all([
      ctx.need(`compare/${base}/${candidate}`),
      ctx.need(`trials/${base}`),
      ctx.need(`trials/${candidate}`),
    ]);
    const view = comparisonView(data, index);
    // mcnemar is empty when the two could not be paired; the outcome comes from the address.
    const outcome = ctx.route.query.get("outcome") || "first_exact";
    const entry = view.mcnemar[outcome];
    const pairs = entry ? entry.cells[cell] : [];
    trialList = pairs.flatMap(([i, j]) => [`${base}/${i}`, `${candidate}/${j}`]);
    const body = h("div");
    let shown = PAGE_ROWS;
    const letter = (cols, t) => cols.outcome[t];
    const draw = () => {
      fill(
        body,
        note(`${fmtCount(Math.min(shown, pairs.length))} of ${fmtCount(pairs.length)} trial pairs`),
        table(
          ["task", "repeat", view.baseName, view.candidateName],
          pairs
            .slice(0, shown)
            .map(([i, j]) =>
              h(
                "tr",
                null,
                td(h("a", { href: route(["task", baseCols.task[i]]) }, baseCols.task[i]), "id"),
                td(`${baseCols.repeat[i]} / ${candidateCols.repeat[j]}`),
                td(outcomeLink(base, i, letter(baseCols, i), view.baseName)),
                td(outcomeLink(candidate, j, letter(candidateCols, j), view.candidateName)),
              ),
            ),
        ),
        pairs.length > shown
          ? morePager(() => {
              shown += PAGE_ROWS;
              draw();
            })
          : null,
      );
    };
    draw();
    const node = h(
      "div",
      null,
      h("p", null, h("a", { href: route(["compare", base, candidate]) }, "← the comparison")),
      h(
        "h1",
        null,
        `${MCNEMAR_CELLS[cell]} (${outcome.replace(/_/g, " ")}): ${view.baseName} and ${view.candidateName}`,
      ),
      note("Each row pairs a trial of the base with the candidate's trial of the same task and repeat."),
      body,
    );
    return { title: MCNEMAR_CELLS[cell], node };
  }

  // ---------------------------------------------------------------------------------------
  // Keyboard and help

  const help = document.getElementById("help");
  let helpReturn = null;

  function openHelp() {
    helpReturn = document.activeElement;
    help.hidden = false;
    document.getElementById("help-close").focus();
  }

  function closeHelp() {
    help.hidden = true;
    if (helpReturn && helpReturn.isConnected) helpReturn.focus();
  }

  function typingIn(target) {
    return (
      target instanceof HTMLElement &&
      (target.isContentEditable || ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName))
    );
  }

  /** j / k: on a trial page the neighbouring trial; elsewhere move between the page's trial links. */
  function moveTrial(step) {
    const page = parseRoute(location.hash).page;
    if (page === "trial") {
      const link = document.getElementById(step > 0 ? "trial-next" : "trial-prev");
      if (link) location.hash = link.getAttribute("href");
      return;
    }
    const links = [...main.querySelectorAll("a.trial-link")];
    if (!links.length) return;
    const here = links.indexOf(document.activeElement);
    const next =
      here < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(Math.max(here + step, 0), links.length - 1);
    links[next].focus();
    links[next].scrollIntoView({ block: "nearest" });
  }

  function focusSearch() {
    const search = document.getElementById("search");
    if (search) {
      search.focus();
      search.select();
    } else {
      focusSearchAfterRender = true;
      location.hash = "#/tasks";
    }
  }
  let focusSearchAfterRender = false;

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (!help.hidden) {
      if (event.key === "Escape" || event.key === "?") {
        event.preventDefault();
        closeHelp();
      }
      return;
    }
    if (typingIn(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    const actions = {
      "?": openHelp,
      "/": focusSearch,
      j: () => moveTrial(1),
      k: () => moveTrial(-1),
      n: () => stepper && parseRoute(location.hash).page === "trial" && stepper.next(),
      p: () => stepper && parseRoute(location.hash).page === "trial" && stepper.prev(),
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  }

  // ---------------------------------------------------------------------------------------
  // Live: in server mode, follow the run directories as they are written

  let version = null;

  function setStatus(text, cls) {
    statusEl.textContent = text;
    statusEl.className = `status ${cls || ""}`;
  }

  async function poll() {
    try {
      const response = await fetch("api/version", { cache: "no-store" });
      if (!response.ok) throw new Error(String(response.status));
      const next = (await response.json()).version;
      if (version !== null && next !== version) await refresh();
      version = next;
      const index = delivered.get("index") || (await load("index").catch(() => null));
      setStatus(index && index.live ? "live" : "up to date", index && index.live ? "live" : "");
    } catch {
      setStatus("server not reachable", "offline");
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  /** Fetch again what the page shows; re-render only when some of it really changed. */
  async function refresh() {
    const names = [...lastNames];
    const before = names.map((name) => texts.get(name));
    cache.clear();
    await Promise.allSettled(names.map(load));
    const changed = names.some((name, i) => texts.get(name) !== before[i]);
    if (changed) await render({ keep: true });
  }

  // ---------------------------------------------------------------------------------------
  // Start

  function start() {
    window.addEventListener("hashchange", (event) => {
      const old = new URL(event.oldURL).hash;
      scrollMemory.set(old, window.scrollY);
      render().then(() => {
        if (focusSearchAfterRender) {
          focusSearchAfterRender = false;
          const search = document.getElementById("search");
          if (search) search.focus();
        }
      });
    });
    document.addEventListener("keydown", onKey);
    document.getElementById("help-button").addEventListener("click", openHelp);
    document.getElementById("help-close").addEventListener("click", closeHelp);
    help.addEventListener("click", (event) => {
      if (event.target === help) closeHelp();
    });
    window
      .matchMedia("(prefers-color-scheme: dark)")
      .addEventListener("change", () => render({ keep: true }));
    load("index").then(
      (index) => {
        document.getElementById("nav-compare").hidden = !index.pairs.length;
      },
      () => {},
    );
    if (MODE === "server") poll();
    else setStatus(MODE === "bundle" ? "static bundle" : "report");
    render();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
