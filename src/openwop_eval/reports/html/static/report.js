// The report's behaviour: pages of tasks from the embedded data, filters, search, deep links.
// Every value from the run is set with textContent — never parsed as HTML — so an agent's
// output cannot inject markup or script into the page.
(function () {
  "use strict";
  const PAGE = 50;
  const TRIALS = 50;  // trials of one task shown at first; the rest on request
  const ENTRIES = 500;  // transcript entries shown; a longer transcript is in the JSON report
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const tasks = data.tasks;
  const byId = new Map(tasks.map((t, i) => [t.taskId, i]));
  const state = { filter: "all", query: "", page: 0, shown: tasks.map((_, i) => i) };
  const $ = (id) => document.getElementById(id);
  const blob = [];  // per task, lower-case text to search; built on first search

  function clone(id) {
    return document.getElementById(id).content.firstElementChild.cloneNode(true);
  }
  function text(root, selector, value) {
    const node = root.querySelector(selector);
    node.textContent = value;
    return node;
  }
  function el(tag, cls, value) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (value !== undefined) node.textContent = value;
    return node;
  }
  function num(x) {
    return x === null || x === undefined ? "—" : String(Math.round(x * 1000) / 1000);
  }
  function json(value) {
    return value === undefined || value === null ? "null" : JSON.stringify(value, null, 2);
  }
  function link(task, trial) {
    const base = "#task=" + encodeURIComponent(task);
    return trial === undefined ? base : base + "/trial=" + (trial + 1);
  }
  function said(reason) {  // a reason as the terminal prints it
    return reason.detail ? reason.message + " (" + reason.detail + ")" : reason.message;
  }
  function list(root, selector, items) {
    const ul = root.querySelector(selector);
    for (const item of items) ul.appendChild(el("li", "", item));
    if (!items.length) ul.remove();
  }

  function matches(t, i) {
    const f = state.filter;
    if (f === "failures" && t.passed) return false;
    if (f === "passes" && !t.passed) return false;
    if (f === "errors" && !t.errored) return false;
    if (f === "flaky" && !t.flaky) return false;
    if (!state.query) return true;
    if (blob[i] === undefined) {
      const parts = [t.taskId, ...t.reasons.map(said)];
      for (const trial of t.trials) {
        const output = typeof trial.output === "string" ? trial.output : json(trial.output);
        parts.push(...trial.reasons.map(said), output, trial.error || "");
        for (const c of trial.calls) parts.push(c.tool);
        for (const x of trial.conversation ? trial.conversation.exchanges : []) {
          for (const v of [x.user, x.reply]) if (v !== undefined) parts.push(typeof v === "string" ? v : json(v));
        }
      }
      blob[i] = parts.join("\n").toLowerCase();
    }
    return blob[i].includes(state.query);
  }

  function apply() {
    state.shown = [];
    tasks.forEach((t, i) => { if (matches(t, i)) state.shown.push(i); });
    const pages = Math.max(1, Math.ceil(state.shown.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    render();
  }

  function render() {
    const main = $("tasks");
    main.replaceChildren();
    const start = state.page * PAGE;
    for (const i of state.shown.slice(start, start + PAGE)) main.appendChild(taskView(tasks[i]));
    if (!state.shown.length) main.appendChild(el("p", "empty", "No task matches."));
    const pages = Math.max(1, Math.ceil(state.shown.length / PAGE));
    $("count").textContent = state.shown.length + " of " + tasks.length + " tasks";
    $("page").textContent = "page " + (state.page + 1) + " of " + pages;
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
  }

  function taskView(t) {
    const node = clone("tpl-task");
    node.id = "task=" + t.taskId;
    node.dataset.task = t.taskId;
    const anchor = node.querySelector(".anchor");
    anchor.href = link(t.taskId);
    text(node, ".task-id", t.taskId);
    const badges = node.querySelector(".badges");
    badges.appendChild(el("span", "badge " + (t.passed ? "pass" : "fail"), t.passed ? "passed" : "failed"));
    if (t.flaky) badges.appendChild(el("span", "badge flaky", "flaky"));
    if (t.agentErrored) badges.appendChild(el("span", "badge error", "errors"));
    if (t.userSimulatorErrors) {
      const n = t.userSimulatorErrors;
      badges.appendChild(el("span", "badge error", "simulated user failed in " + n + " trial" + (n === 1 ? "" : "s")));
    }
    for (const f of t.safetyFindings) badges.appendChild(el("span", "badge finding", f.kind + " (" + f.severity + ")"));
    text(node, ".score", num(t.score));
    text(node, ".gated", num(t.gatedScore));
    text(node, ".pak", num(t.passAtK));
    text(node, ".phk", num(t.passHatK));
    text(node, ".tp", t.passedTrials + " / " + t.trials.length);
    sideBySide(node.querySelector(".side-by-side tbody"), t);
    list(node, ".reasons", t.reasons.map(said));
    const holder = node.querySelector(".trials");
    for (const trial of t.trials.slice(0, TRIALS)) holder.appendChild(trialView(t, trial));
    if (t.trials.length > TRIALS) {
      const more = el("button", "more", "show all " + t.trials.length + " trials");
      more.type = "button";
      more.addEventListener("click", () => showAll(t, holder, more));
      holder.appendChild(more);
    }
    return node;
  }

  function showAll(t, holder, more) {
    if (!more.isConnected) return;
    more.remove();
    for (const trial of t.trials.slice(TRIALS)) holder.appendChild(trialView(t, trial));
  }

  function sideBySide(body, t) {
    const rows = [
      ["trial", (tr) => { const a = el("a", "", "#" + (tr.trial + 1)); a.href = link(t.taskId, tr.trial); return a; }],
      ["outcome", (tr) => tr.outcome],
      ["score", (tr) => num(tr.score)],
      ["gating score", (tr) => num(tr.gatingScore)],
      ["tool calls", (tr) => String(tr.calls.length)],
    ];
    if (t.trials.some((tr) => tr.conversation)) {
      rows.push(["turns", (tr) => tr.conversation ? String(tr.conversation.turns) : "—"]);
    }
    for (const [name, cell] of rows) {
      const tr = el("tr");
      tr.appendChild(el("td", "", name));
      for (const trial of t.trials.slice(0, TRIALS)) {
        const td = el("td", "t-" + trial.outcome);
        const value = cell(trial);
        if (typeof value === "string") td.textContent = value; else td.appendChild(value);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
  }

  function trialView(t, trial) {
    const node = clone("tpl-trial");
    node.id = "task=" + t.taskId + "/trial=" + (trial.trial + 1);
    text(node, ".title", "trial " + (trial.trial + 1));
    const turns = trial.conversation ? " · " + trial.conversation.turns + " turn" + (trial.conversation.turns === 1 ? "" : "s") : "";
    text(node, ".outcome", trial.outcome + ": " + trial.gate + turns);
    const gate = text(node, ".gate", "score " + num(trial.score) + " · gating score " + num(trial.gatingScore));
    if (trial.gatingScore < trial.score || !trial.passed) gate.classList.add("zeroed");
    list(node, ".reasons", trial.reasons.map((r) => said(r) + inTurn(trial, r)));
    node.addEventListener("toggle", () => { if (node.open) fill(node, trial); }, { once: true });
    return node;
  }

  function fill(node, trial) {
    const diff = node.querySelector(".diff");
    if (trial.trajectory) {
      const body = diff.querySelector("tbody");
      for (const s of trial.trajectory.steps) {
        const row = clone("tpl-step");
        row.className = "s-" + s.status;
        text(row, ".n", "step " + (s.index + 1));
        text(row, ".tool", s.tool);
        text(row, ".status", s.status === "matched" ? "matched by call " + (s.call + 1) : s.status);
        text(row, ".explanation", s.explanation || "");
        body.appendChild(row);
      }
    } else diff.remove();
    const timeline = node.querySelector(".timeline");
    if (trial.conversation) {
      text(node, ".calls-head", "conversation, turn by turn, with the tool calls of each turn");
      text(node, ".output-head", "output: the agent's last reply");
      timeline.replaceWith(chatView(trial));
    } else {
      trial.calls.forEach((c) => timeline.appendChild(callView(c)));
      if (!trial.calls.length) timeline.replaceWith(el("p", "empty", "no tool calls"));
    }
    const judge = node.querySelector(".judge");
    if (trial.verdicts.length || trial.judgeError) {
      const body = judge.querySelector("tbody");
      for (const v of trial.verdicts) {
        const row = clone("tpl-step");
        text(row, ".n", "met " + num(v.met));
        text(row, ".tool", v.criterion);
        text(row, ".status", v.met >= 1 ? "met" : v.met > 0 ? "partly" : "not met");
        text(row, ".explanation", v.rationale || "");
        body.appendChild(row);
      }
      if (trial.judgeError) judge.appendChild(el("p", "no", trial.judgeError));
    } else judge.remove();
    if (trial.error) {
      const kind = trial.errorKind === "infrastructure" ? "infrastructure, not the agent: " : "";
      if (trial.userSimulator) text(node, ".error-head", "error of the simulated user, not the agent");
      text(node, ".error-text", kind + trial.error);
      if (trial.traceback) text(node, ".traceback", trial.traceback); else node.querySelector(".error-traceback").remove();
      if (trial.stderr) text(node, ".stderr", trial.stderr); else node.querySelector(".error-stderr").remove();
    } else node.querySelector(".error").remove();
    const findings = node.querySelector(".findings");
    if (trial.safetyFindings.length) {
      for (const f of trial.safetyFindings) {
        findings.querySelector("ul").appendChild(el("li", "", f.kind + " (" + f.severity + "): " + (f.where || "")));
      }
    } else findings.remove();
    text(node, ".output", json(trial.output));
    transcriptView(node.querySelector(".transcript"), trial.transcript);
    const measures = [];
    if (trial.costUsd !== null) measures.push("cost $" + trial.costUsd);
    if (trial.latencyMs !== null) measures.push("latency " + Math.round(trial.latencyMs) + " ms");
    text(node, ".measures", measures.join(" · "));
  }

  // What the agent exchanged with its model, one entry per chat message or Responses item;
  // any other transcript (an agent's own JSON) as JSON.
  function transcriptView(holder, transcript) {
    if (transcript === null || transcript === undefined) { holder.remove(); return; }
    const entries = Array.isArray(transcript) ? transcript
      : Array.isArray(transcript.messages) ? transcript.messages
      : Array.isArray(transcript.items) ? transcript.items : null;
    const list = holder.querySelector(".exchange");
    if (entries === null) { list.replaceWith(el("pre", "", json(transcript))); return; }
    const api = typeof transcript.api === "string" ? " · " + transcript.api + " API" : "";
    text(holder, "summary", "transcript" + api + " · " + entries.length + " entries");
    for (const e of entries.slice(0, ENTRIES)) {
      const [who, said] = entry(e);
      const li = el("li", "entry");
      li.appendChild(el("span", "who mono", who));
      li.appendChild(el("pre", "", said));
      list.appendChild(li);
    }
    if (entries.length > ENTRIES) holder.appendChild(el("p", "empty", (entries.length - ENTRIES) + " more in the JSON report"));
  }

  function entry(e) {  // [who, what was said]
    const str = (v) => typeof v === "string" ? v : json(v);
    if (e === null || typeof e !== "object") return ["", json(e)];
    if (e.type === "function_call") return ["call " + str(e.call_id), str(e.name) + " " + str(e.arguments)];
    if (e.type === "function_call_output") return ["result " + str(e.call_id), str(e.output)];
    const lines = e.content === null || e.content === undefined ? [] : [str(e.content)];
    for (const c of Array.isArray(e.tool_calls) ? e.tool_calls : []) {
      const f = c && typeof c.function === "object" && c.function !== null ? c.function : {};
      lines.push("→ " + str(f.name) + " " + str(f.arguments));
    }
    const who = str(e.role || e.type || "") + (e.tool_call_id ? " " + str(e.tool_call_id) : "");
    return [who, lines.join("\n")];
  }

  // A conversation as people read it: per turn the user's message, the calls the agent made
  // answering it (numbered as in the whole conversation, as reasons count them), its reply;
  // a turn where the path went wrong carries its reasons.
  function chatView(trial) {
    const conversation = trial.conversation;
    const holder = el("div", "conversation");
    const turns = el("ol", "chat");
    for (const x of conversation.exchanges) turns.appendChild(turnView(trial, x, conversation.maxTurns));
    holder.appendChild(turns);
    holder.appendChild(el("p", "ended ended-" + conversation.ended, conversation.ending));
    return holder;
  }

  function turnView(trial, x, maxTurns) {
    const node = clone("tpl-turn");
    const past = maxTurns !== null && x.turn >= maxTurns;  // the user spoke after the last turn
    node.dataset.turn = String(x.turn + 1);
    text(node, ".turn-n", past ? "after the last turn" : "turn " + (x.turn + 1));
    const tags = node.querySelector(".tags");
    if (x.reasons.length) {
      node.classList.add("wrong");
      tags.appendChild(el("span", "tag bad", "the path went wrong here"));
    }
    if (past) tags.appendChild(el("span", "tag bad", "not answered: out of turns"));
    const prefix = "turn " + (x.turn + 1) + ": ";  // said by the turn's heading already
    list(node, ".reasons", x.reasons.map((r) => { const s = said(r); return s.startsWith(prefix) ? s.slice(prefix.length) : s; }));
    speech(node.querySelector(".msg.user"), "user" in x, x.user);
    const timeline = node.querySelector(".timeline");
    for (const i of x.calls) if (trial.calls[i]) timeline.appendChild(callView(trial.calls[i]));
    if (x.calls.length) timeline.start = x.calls[0] + 1;
    else if (past) timeline.remove();
    else timeline.replaceWith(el("p", "empty", "no tool calls"));
    speech(node.querySelector(".msg.agent"), "reply" in x, x.reply);
    return node;
  }

  function inTurn(trial, reason) {  // where a reason of a conversation that does not say it was
    if (!trial.conversation || reason.turn !== undefined) return "";
    const at = trial.conversation.exchanges.find((x) => x.reasons.some((r) => r.message === reason.message));
    return at ? " — in turn " + (at.turn + 1) : "";
  }

  function speech(node, present, value) {
    if (!present) { node.remove(); return; }
    const words = node.querySelector(".said");
    if (typeof value === "string") words.textContent = value;
    else { words.textContent = json(value); words.classList.add("mono"); }
  }

  function callView(c) {
    const node = clone("tpl-call");
    text(node, ".tool", c.tool);
    const tags = node.querySelector(".tags");
    const tag = (cls, value) => tags.appendChild(el("span", "tag " + cls, value));
    if (c.step !== null) tag("step", "step " + (c.step + 1));
    else if (!c.forbidden && !c.missed) tag("", "extra call");
    if (c.forbidden) { node.classList.add("forbidden"); tag("bad", "forbidden"); }
    if (c.missed) { node.classList.add("missed"); tag("bad", "fixture miss"); }
    if (c.status && c.status !== "ok") tag("bad", c.status);
    text(node, ".args", json(c.args));
    text(node, ".result", c.error ? c.error : json(c.result));
    return node;
  }

  function follow() {
    let hash;
    try { hash = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }  // not ours
    const m = /^task=(.*?)(?:\/trial=(\d+))?$/.exec(hash);
    if (!m || !byId.has(m[1])) return;
    const i = byId.get(m[1]);
    if (!state.shown.includes(i)) { setFilter("all"); $("search").value = ""; state.query = ""; apply(); }
    state.page = Math.floor(state.shown.indexOf(i) / PAGE);
    render();
    document.querySelectorAll(".target").forEach((n) => n.classList.remove("target"));
    let target = document.getElementById("task=" + m[1]);
    if (m[2]) {
      const more = target && target.querySelector("button.more");
      if (more && Number(m[2]) > TRIALS) more.click();
      const trial = document.getElementById("task=" + m[1] + "/trial=" + m[2]);
      if (trial) { trial.open = true; target = trial; }
    }
    if (target) { target.classList.add("target"); target.scrollIntoView(); }
  }

  function setFilter(name) {
    state.filter = name;
    document.querySelectorAll("[data-filter]").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.filter === name)));
  }

  document.querySelectorAll("[data-filter]").forEach((b) => b.addEventListener("click", () => {
    setFilter(b.dataset.filter); state.page = 0; apply();
  }));
  let pending = null;
  $("search").addEventListener("input", (e) => {
    clearTimeout(pending);
    pending = setTimeout(() => { state.query = e.target.value.trim().toLowerCase(); state.page = 0; apply(); }, 120);
  });
  $("prev").addEventListener("click", () => { state.page -= 1; render(); window.scrollTo(0, 0); });
  $("next").addEventListener("click", () => { state.page += 1; render(); window.scrollTo(0, 0); });
  window.addEventListener("hashchange", follow);
  render();
  follow();
  document.body.dataset.ready = "true";
})();
