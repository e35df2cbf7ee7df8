// rerankit playground: plain JavaScript, no build step, nothing loaded from elsewhere.
"use strict";

(function () {
  const ROW = 46; // px per ranked row: the movement lines are drawn on this grid
  const COLORS = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"];
  const $ = (id) => document.getElementById(id);
  const state = { info: null, columns: [], request: null };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("data-") || k.startsWith("aria-") || k === "role" || k === "tabindex" || k === "type" || k === "title") node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }

  function fmt(x, digits = 4) {
    return x === null || x === undefined ? "–" : Number(x).toFixed(digits);
  }

  // -- talking to the service -----------------------------------------------------------

  function headers(json) {
    const h = {};
    if (json) h["Content-Type"] = "application/json";
    const key = $("key").value.trim();
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
  }

  async function api(path, body) {
    const init = body === undefined
      ? { headers: headers(false) }
      : { method: "POST", headers: headers(true), body: JSON.stringify(body) };
    const res = await fetch(path, init);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (res.status === 401) {
      $("key-row").hidden = false;
    }
    if (!res.ok) {
      const message = data && data.message ? data.message : "HTTP " + res.status;
      const err = new Error(message);
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message;
    box.hidden = !message;
  }

  async function loadModels() {
    try {
      const data = await api("/v1/models");
      data.models = data.models.filter((m) => !m.alias_of);  // aliases name the same pipelines
      const a = $("pipeline-a"), b = $("pipeline-b");
      const keepA = a.value, keepB = b.value;
      a.replaceChildren();
      b.replaceChildren(el("option", { value: "", text: "(none)" }));
      for (const m of data.models) {
        const label = m.name + (m.default ? " (default)" : "");
        a.append(el("option", { value: m.name, text: label }));
        b.append(el("option", { value: m.name, text: label }));
      }
      const names = data.models.map((m) => m.name);
      const byDefault = data.models.find((m) => m.default);
      a.value = names.includes(keepA) ? keepA : (byDefault ? byDefault.name : names[0]);
      b.value = names.includes(keepB) ? keepB : "";
      showError("");
      try { state.info = await api("/info"); } catch (e) { state.info = null; }
      if (state.info) {
        $("service-line").textContent = "rerankit " + state.info.version + " · " + names.length +
          " pipeline" + (names.length === 1 ? "" : "s") + (state.info.ready ? "" : " · still warming up");
      }
    } catch (e) {
      showError(e.status === 401 ? "This service needs an API key: type it above, then press Enter." : "Could not list the pipelines: " + e.message);
    }
  }

  // -- input ---------------------------------------------------------------------------

  function parseCandidates(text) {
    const t = text.trim();
    if (!t) throw new Error("candidates: paste at least one (one per line, or JSON)");
    if (t.startsWith("[")) {
      let arr;
      try { arr = JSON.parse(t); } catch (e) { throw new Error("candidates: not a valid JSON array (" + e.message + ")"); }
      if (!Array.isArray(arr) || arr.length === 0) throw new Error("candidates: the JSON array is empty");
      return arr;
    }
    const lines = t.split(/\r?\n/).filter((l) => l.trim());
    if (lines.every((l) => l.trim().startsWith("{"))) {
      return lines.map((l, i) => {
        try { return JSON.parse(l); } catch (e) { throw new Error("candidates line " + (i + 1) + ": not JSON (" + e.message + ")"); }
      });
    }
    return lines;
  }

  // the field options as the API takes them: only those typed in
  function fieldOptions() {
    const out = {};
    const names = $("text-fields").value.split(",").map((f) => f.trim()).filter(Boolean);
    if (names.length) out.rank_fields = names;
    if ($("title-field").value.trim()) out.title_field = $("title-field").value.trim();
    if ($("first-stage-field").value.trim()) out.first_stage_field = $("first-stage-field").value.trim();
    return out;
  }

  function textOf(doc, fields) {
    if (typeof doc === "string") return doc;
    const names = (fields && fields.rank_fields) || ["text"];
    const own = (k) => doc && typeof doc[k] === "string";
    if (names.length > 1) return names.filter(own).map((k) => k + ": " + doc[k]).join("\n");
    return own(names[0]) ? doc[names[0]] : JSON.stringify(doc);
  }

  // the first stage's order; each document's text and id as the pipelines' answers give
  // them (``known``, by index), so a document reads the same in every column
  function firstStage(docs, fields, known) {
    const field = (fields && fields.first_stage_field) || "first_stage_score";
    const scores = docs.map((d) => (d && typeof d === "object" ? d[field] : undefined));
    if (!scores.every((s) => typeof s === "number" && isFinite(s))) return null;
    const order = docs.map((_, i) => i).sort((x, y) => scores[y] - scores[x] || x - y);
    return order.map((index, r) => {
      const seen = known[index];
      const doc = docs[index];
      const id = seen ? seen.id : (doc && typeof doc === "object" ? doc.id : undefined);
      return { index, rank: r + 1, score: scores[index], flags: [], strategies: {}, id, text: seen ? seen.text : textOf(doc, fields) };
    });
  }

  // -- ranking -------------------------------------------------------------------------

  async function rank(event) {
    if (event) event.preventDefault();
    showError("");
    const query = $("query").value;
    let docs;
    try {
      if (!query.trim()) throw new Error("query: type what you are searching for");
      docs = parseCandidates($("candidates").value);
    } catch (e) {
      showError(e.message);
      return;
    }
    const names = [$("pipeline-a").value, $("pipeline-b").value].filter(Boolean);
    if (!names.length) { showError("choose a pipeline"); return; }
    const button = $("rank");
    button.disabled = true;
    button.textContent = "Ranking…";
    try {
      const fields = fieldOptions();
      const answers = await Promise.all(names.map((name) => api("/v1/explain", { model: name, query, documents: docs, ...fields })));
      state.request = { query, docs, names, fields };
      const columns = [];
      const known = {};
      for (const ans of answers) for (const r of ans.results) known[r.index] = r;
      const fs = firstStage(docs, fields, known);
      if (fs) columns.push({ key: "first", title: "First stage", subtitle: "by " + (fields.first_stage_field || "first_stage_score"), results: fs, answer: null });
      names.forEach((name, i) => {
        const ans = answers[i];
        const t = ans.timings || {};
        const ms = t.inference !== undefined ? (1000 * t.inference).toFixed(0) + " ms" : "";
        columns.push({ key: i === 0 ? "a" : "b", title: (i === 0 ? "A: " : "B: ") + name, subtitle: ans.score_scale + (ms ? " · " + ms : ""), results: ans.results, answer: ans, name });
      });
      state.columns = columns;
      renderColumns();
      renderTools();
      $("details").hidden = true;
      document.body.dataset.ranked = String(Number(document.body.dataset.ranked || 0) + 1);
    } catch (e) {
      showError(e.message);
    } finally {
      button.disabled = false;
      button.textContent = "Rank";
    }
  }

  function renderColumns() {
    const box = $("columns");
    box.replaceChildren();
    const cols = state.columns;
    const rows = Math.max(...cols.map((c) => c.results.length));
    cols.forEach((col, c) => {
      if (c > 0) box.append(movesSvg(cols[c - 1], col, rows));
      const prevRank = c > 0 ? Object.fromEntries(cols[c - 1].results.map((r) => [r.index, r.rank])) : null;
      const list = el("ol", { class: "ranking", "data-column": col.key, "aria-label": col.title });
      for (const r of col.results) {
        let move = null;
        if (prevRank && prevRank[r.index] !== undefined) {
          const d = prevRank[r.index] - r.rank;
          move = el("span", { class: "move " + (d > 0 ? "up" : d < 0 ? "down" : "same"), text: d > 0 ? "▲" + d : d < 0 ? "▼" + -d : "=", title: d === 0 ? "same place" : (d > 0 ? "up " : "down ") + Math.abs(d) });
        }
        const label = "#" + r.rank + ", document " + r.index + (hasId(r) ? " (" + r.id + ")" : "") + ", score " + fmt(r.score, 3);
        const button = el("button", { type: "button", class: "doc", "data-index": String(r.index), "data-column": col.key, "aria-label": label },
          el("span", { class: "rank", text: String(r.rank) }),
          hasId(r) ? el("span", { class: "doc-id", text: String(r.id), title: "id " + r.id }) : null,
          el("span", { class: "snippet", text: r.text, title: r.text }),
          el("span", { class: "score", text: fmt(r.score, 3) }),
          move,
          r.flags && r.flags.length ? el("span", { class: "flag", text: "!", title: "flagged: " + r.flags.join(", ") }) : null);
        button.addEventListener("click", () => showDetails(col, r));
        list.append(el("li", {}, button));
      }
      const against = c > 0 ? " · arrows: vs " + (cols[c - 1].key === "first" ? "first stage" : cols[c - 1].title.split(":")[0]) : "";
      box.append(el("div", { class: "column" }, el("h3", { text: col.title }), el("p", { class: "hint", text: col.subtitle + against }), list));
    });
    $("results").hidden = false;
  }

  const hasId = (r) => r.id !== undefined && r.id !== null && r.id !== "";

  function movesSvg(left, right, rows) {
    const height = rows * ROW;
    const s = svg("svg", { class: "moves", width: "48", height: String(height), viewBox: "0 0 48 " + height, "aria-hidden": "true" });
    const from = Object.fromEntries(left.results.map((r) => [r.index, r.rank]));
    for (const r of right.results) {
      if (from[r.index] === undefined) continue;
      const y1 = (from[r.index] - 0.5) * ROW, y2 = (r.rank - 0.5) * ROW;
      const cls = y2 < y1 ? "up" : y2 > y1 ? "down" : "same";
      s.append(svg("line", { x1: "2", y1: String(y1), x2: "46", y2: String(y2), class: cls }));
    }
    const wrap = el("div", { class: "moves-wrap" });
    wrap.append(s);
    return wrap;
  }

  // -- one document's explanation ----------------------------------------------------------

  function showDetails(col, r) {
    const body = $("details-body");
    body.replaceChildren();
    const doc = state.request.docs[r.index];
    const id = doc && typeof doc === "object" && doc.id !== undefined ? ", id " + doc.id : "";
    // both counted from 1, as a person counts; the API's 0-based index named as such
    const of = " of " + state.request.docs.length;
    $("details-title").textContent = col.title + " · rank " + r.rank + of + " · candidate " + (r.index + 1) + of + " (index " + r.index + id + ")";
    body.append(el("p", { class: "doc-text", text: r.text }));
    const facts = el("dl", { class: "facts" });
    const fact = (k, v, cls) => { facts.append(el("dt", { text: k }), el("dd", { text: v, class: cls || null })); };
    fact("score", fmt(r.score), "detail-score");
    if (col.answer) {
      fact("relevance_score", fmt(r.relevance_score));
      fact("scores mean", col.answer.score_scale);
    }
    fact("flags", r.flags && r.flags.length ? r.flags.join(", ") : "none", "detail-flags");
    body.append(facts);
    const names = Object.keys(r.strategies || {});
    if (names.length) {
      body.append(el("h3", { text: "Contributions by strategy" }));
      const terms = names.filter((n) => r.strategies[n].contribution !== null && r.strategies[n].contribution !== undefined);
      body.append(contributionBar(r, terms));
      const link = r.score_from_contributions === "sigmoid(sum)" ? "score = sigmoid(sum of the contributions): each is a weighted, calibrated logit" : "score = sum of the contributions";
      body.append(el("p", { class: "hint how", text: link + "; left of the line lowers the score, right of it raises it." }));
      const table = el("table", { class: "strategies" });
      table.append(el("thead", {}, el("tr", {}, ...["strategy", "raw", "normalised", "weight", "contribution"].map((h) => el("th", { scope: "col", text: h })))));
      const tbody = el("tbody");
      names.forEach((name, i) => {
        const p = r.strategies[name];
        tbody.append(el("tr", { "data-strategy": name },
          el("th", { scope: "row" }, el("span", { class: "swatch" }), name),
          el("td", { text: fmt(p.raw) }),
          el("td", { text: fmt(p.normalized) }),
          el("td", { text: fmt(p.weight) }),
          p.contribution === null || p.contribution === undefined
            ? el("td", { class: "contribution earlier", "data-strategy": name, text: "earlier stage", title: "the stage that chose this candidate (its own contribution there: " + fmt(p.earlier_stage_contribution) + "); a later stage gave the score, so it is not a term of it" })
            : el("td", { class: "contribution", "data-strategy": name, text: signed(p.contribution) })));
        tbody.lastChild.querySelector(".swatch").style.background = COLORS[i % COLORS.length];
      });
      table.append(tbody);
      body.append(table);
    } else if (!col.answer) {
      body.append(el("p", { class: "hint", text: "The first stage's own score; pick a pipeline column for an explanation." }));
    }
    if (col.answer) {
      const a = col.answer;
      if (a.warnings && a.warnings.length) {
        body.append(el("h3", { text: "Warnings" }));
        body.append(el("ul", { class: "warnings" }, ...a.warnings.map((w) => el("li", { text: w }))));
      }
      body.append(el("h3", { text: "This request" }));
      const req = el("dl", { class: "facts" });
      for (const [k, v] of Object.entries(a.timings || {})) req.append(el("dt", { text: k }), el("dd", { text: (1000 * v).toFixed(1) + " ms" }));
      const usage = Object.entries(a.usage || {});
      req.append(el("dt", { text: "LLM usage" }), el("dd", { text: usage.length ? usage.map(([k, v]) => k + " " + v).join(", ") : "none" }));
      if (a.degraded) req.append(el("dt", { text: "degraded" }), el("dd", { text: "yes" }));
      body.append(req);
    }
    $("details").hidden = false;
    $("details-title").focus();
  }

  function signed(x) {
    return typeof x === "number" && x > 0 ? "+" + fmt(x) : fmt(x);
  }

  // A diverging bar: negative contributions stack leftwards from the zero line, positive
  // ones rightwards, each as wide as its size (colour: its strategy, as in the table).
  function contributionBar(r, names) {
    const parts = names.map((n) => r.strategies[n].contribution || 0);
    const neg = parts.reduce((s, x) => s + Math.max(-x, 0), 0);
    const total = parts.reduce((s, x) => s + Math.abs(x), 0) || 1;
    const width = 600, height = 28, zero = (neg / total) * width;
    const all = Object.keys(r.strategies);
    const s = svg("svg", { class: "bar", viewBox: "0 0 " + width + " " + height, preserveAspectRatio: "none", role: "img", "aria-label": "contributions: " + names.map((n, i) => n + " " + signed(parts[i])).join(", ") });
    let left = zero, right = zero;
    names.forEach((n, i) => {
      const w = (Math.abs(parts[i]) / total) * width;
      const x = parts[i] < 0 ? (left -= w) : right;
      if (parts[i] >= 0) right += w;
      const rect = svg("rect", { x: String(x), y: "0", width: String(w), height: String(height), fill: COLORS[all.indexOf(n) % COLORS.length], "data-strategy": n, "data-sign": parts[i] < 0 ? "-" : "+", class: parts[i] < 0 ? "negative" : "positive" });
      const title = svg("title", {});
      title.textContent = n + ": " + signed(parts[i]);
      rect.append(title);
      s.append(rect);
    });
    s.append(svg("line", { class: "zero", x1: String(zero), x2: String(zero), y1: "0", y2: String(height) }));
    return s;
  }

  // -- curl and TOML ---------------------------------------------------------------------

  function shellQuote(s) {
    return "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function tomlValue(v) {
    if (typeof v === "string") return JSON.stringify(v);
    if (typeof v === "boolean" || typeof v === "number") return String(v);
    if (Array.isArray(v)) return "[" + v.map(tomlValue).join(", ") + "]";
    if (v && typeof v === "object") return "{ " + Object.entries(v).map(([k, x]) => tomlKey(k) + " = " + tomlValue(x)).join(", ") + " }";
    return '""';
  }

  function tomlKey(k) {
    return /^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k);
  }

  function toToml(name, spec) {
    const head = "[pipelines." + tomlKey(name) + "]";
    const lines = [head];
    const tables = [];
    for (const [k, v] of Object.entries(spec)) {
      if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === "object" && !Array.isArray(x))) tables.push([k, v]);
      else lines.push(tomlKey(k) + " = " + tomlValue(v));
    }
    for (const [k, items] of tables) {
      for (const item of items) {
        lines.push("", "[[pipelines." + tomlKey(name) + "." + tomlKey(k) + "]]");
        for (const [ik, iv] of Object.entries(item)) lines.push(tomlKey(ik) + " = " + tomlValue(iv));
      }
    }
    return lines.join("\n") + "\n";
  }

  function pipelinesToml(names, specs) {
    // the settings file's documented form: a [pipelines.NAME] table each, a pipeline
    // named by a string (a registered name, a file, a model) as its reranker
    const parts = [];
    for (const n of names) {
      if (!specs[n]) parts.push("# " + n + ": its declaration is not available\n");
      else if (typeof specs[n].spec === "string") parts.push("[pipelines." + tomlKey(n) + "]\nreranker = " + JSON.stringify(specs[n].spec) + "\n");
      else parts.push(toToml(n, specs[n].spec));
    }
    return parts.join("\n");
  }

  function curl(path, body, keyed) {
    return "curl -s " + location.origin + path + keyed + " \\\n  -H 'Content-Type: application/json' \\\n  -d " + shellQuote(JSON.stringify(body));
  }

  function renderTools() {
    const { query, docs, names, fields } = state.request;
    const keyed = $("key").value.trim() ? " \\\n  -H 'Authorization: Bearer '\"$RERANKIT_API_KEY\"" : "";
    // the request that ranks as the page did: v2 takes texts only, so documents that are
    // objects (a title, an id, a first-stage score, fields named) go to v1 as they are
    const plain = docs.every((d) => typeof d === "string") && !Object.keys(fields).length;
    $("curl-title").textContent = plain
      ? "curl: rerank with pipeline A (Cohere v2)"
      : "curl: rerank with pipeline A (Cohere v1, the documents as objects)";
    $("curl").textContent = plain
      ? curl("/v2/rerank", { model: names[0], query, documents: docs, top_n: docs.length }, keyed)
      : curl("/v1/rerank", { model: names[0], query, documents: docs, top_n: docs.length, return_documents: false, ...fields }, keyed);
    $("curl-explain").textContent = curl("/v1/explain", { model: names[0], query, documents: docs, ...fields }, keyed);
    const specs = state.info && state.info.pipelines ? state.info.pipelines : {};
    $("toml").textContent = pipelinesToml(names, specs);
    $("tools").hidden = false;
  }

  async function copy(id) {
    const text = $(id).textContent;
    try {
      await navigator.clipboard.writeText(text);
      $("copied").textContent = "Copied.";
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents($(id));
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      $("copied").textContent = "Selected: press Ctrl+C to copy.";
    }
  }

  async function loadSample() {
    try {
      const res = await fetch("/playground/sample.json");
      const sample = await res.json();
      $("query").value = sample.query;
      $("candidates").value = sample.candidates.map((c) => JSON.stringify(c)).join("\n");
      showError("");
      $("query").focus();
    } catch (e) {
      showError("Could not load the sample: " + e.message);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("rank-form").addEventListener("submit", rank);
    $("sample").addEventListener("click", loadSample);
    $("copy-curl").addEventListener("click", () => copy("curl"));
    $("copy-curl-explain").addEventListener("click", () => copy("curl-explain"));
    $("copy-toml").addEventListener("click", () => copy("toml"));
    $("candidates").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) rank(e);
    });
    $("key").addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); loadModels(); }
    });
    $("key").addEventListener("change", loadModels);
    loadModels();
  });
})();
