// The console's only script: it keeps the home page's lists and the task page's log
// live. Every page works without it (forms post, pages render on the server); it
// builds the DOM with textContent only, so nothing from a task is ever read as HTML.
(function () {
  "use strict";
  var body = document.body;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) {
      if (r.status === 401) {
        window.location.assign("/signin");
        throw new Error("signed out");
      }
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json();
    });
  }

  // Home: the three groups, polled every 2 s.
  function home() {
    var live = document.getElementById("live");
    function draw(groups) {
      groups.forEach(function (g) {
        var sec = document.getElementById("g-" + g.key);
        if (!sec) return;
        sec.querySelector(".count").textContent = String(g.tasks.length);
        var ul = el("ul", "tasks");
        if (g.tasks.length === 0) ul.appendChild(el("li", "empty", "Nothing here."));
        g.tasks.forEach(function (t) {
          var li = el("li");
          var a = el("a");
          a.href = "/tasks/" + encodeURIComponent(t.id);
          a.appendChild(el("span", "title", t.title));
          a.appendChild(document.createTextNode(" "));
          a.appendChild(el("span", "badge s-" + t.status, t.status_text));
          if (t.schedule) {
            a.appendChild(document.createTextNode(" "));
            var s = el("span", "sched", "scheduled");
            s.title = "started by schedule " + t.schedule;
            a.appendChild(s);
          }
          a.appendChild(document.createTextNode(" "));
          a.appendChild(el("time", "", t.updated));
          li.appendChild(a);
          ul.appendChild(li);
        });
        sec.replaceChild(ul, sec.querySelector("ul.tasks"));
      });
    }
    function poll() {
      getJSON("/api/tasks").then(function (d) {
        draw(d.groups);
        live.textContent = "Updated " + new Date().toLocaleTimeString() + ".";
      }).catch(function () {
        live.textContent = "Could not reach the service; retrying.";
      }).then(function () { setTimeout(poll, 2000); });
    }
    setTimeout(poll, 2000);
  }

  // Task: the event log over the stream, and the panel swapped when the state changes.
  function task() {
    var id = body.getAttribute("data-task");
    var log = document.getElementById("log");
    var state = document.getElementById("log-state");
    var slot = document.getElementById("panel-slot");
    var last = 0;

    function entry(cls, label, text) {
      var li = el("li", "ev " + cls);
      li.appendChild(el("span", "ev-label", label));
      if (text !== undefined && text !== "") li.appendChild(el("pre", "ev-body", text));
      log.appendChild(li);
      return li;
    }
    function clip(s) {
      s = String(s === undefined || s === null ? "" : s);
      return s.length > 4000 ? s.slice(0, 4000) + "\n… (" + (s.length - 4000) + " more characters)" : s;
    }
    function inputText(name, input) {
      if (!input) return "";
      if (name === "Bash" && input.command) return "$ " + input.command;
      if ((name === "Write" || name === "Edit" || name === "Read" || name === "MultiEdit") && input.file_path) {
        var s = input.file_path;
        if (name === "Write" && input.content !== undefined) s += "\n" + input.content;
        if (name === "Edit") s += "\n- " + String(input.old_string).split("\n").join("\n- ") + "\n+ " + String(input.new_string).split("\n").join("\n+ ");
        return s;
      }
      return JSON.stringify(input, null, 2);
    }
    function show(d) {
      switch (d.type) {
        case "system":
          entry("sys", "Started" + (d.session_id ? " session " + d.session_id : ""));
          break;
        case "assistant":
          ((d.message && d.message.content) || []).forEach(function (b) {
            if (b.type === "text" && b.text) entry("text", "Model", clip(b.text));
          });
          break;
        case "tool_use":
          entry("tool", "Tool call: " + d.name, clip(inputText(d.name, d.input)));
          break;
        case "tool_result":
          entry(d.is_error ? "tool-out err" : "tool-out", (d.is_error ? "Tool failed: " : "Tool output: ") + d.name, clip(d.content));
          break;
        case "permission":
          if (d.subtype === "question") entry("ask", "Question: " + d.tool, clip(d.message || inputText(d.tool, d.input)));
          else entry("deny", "Denied: " + d.tool, clip(d.reason || d.code || ""));
          break;
        case "notice":
          entry("ev-notice", "Notice: " + d.code, clip(d.message));
          break;
        case "result":
          entry("result s-" + d.status, "Leg ended: " + d.status, clip(d.result || (d.error && d.error.message) || ""));
          break;
        case "subagent_start":
        case "subagent_end":
        case "todos":
        case "compaction":
          entry("sys", d.type.replace("_", " "));
          break;
      }
    }

    var es = new EventSource("/tasks/" + encodeURIComponent(id) + "/events");
    es.onopen = function () { state.textContent = "Live."; };
    es.onerror = function () { state.textContent = "Reconnecting…"; };
    es.onmessage = function (m) {
      var n = parseInt(m.lastEventId, 10);
      if (n && n <= last) return;
      if (n) last = n;
      var d;
      try { d = JSON.parse(m.data); } catch (e) { return; }
      show(d);
      if (d.type === "result") refresh();
    };

    var seen = slot.querySelector("#panel");
    var status = seen ? seen.getAttribute("data-status") : "";
    var checkpoint = seen ? seen.getAttribute("data-checkpoint") : "";
    function ended(s) { return s !== "queued" && s !== "running" && s !== "awaiting_approval"; }
    function refresh() {
      return fetch("/tasks/" + encodeURIComponent(id) + "/panel", { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      }).then(function (html) {
        // The fragment is the server's own template output (html/template escaped).
        var typing = document.activeElement && document.activeElement.id === "message";
        if (typing) return;
        slot.innerHTML = html;
        var p = slot.querySelector("#panel");
        status = p.getAttribute("data-status");
        checkpoint = p.getAttribute("data-checkpoint");
        if (ended(status)) {
          es.close();
          state.textContent = "The task has ended.";
        }
      });
    }
    if (ended(status)) setTimeout(function () { es.close(); state.textContent = "The task has ended."; }, 3000);
    function poll() {
      getJSON("/api/tasks/" + encodeURIComponent(id)).then(function (d) {
        if (d.status !== status || (d.checkpoint_id || "") !== checkpoint) return refresh();
      }).catch(function () {}).then(function () {
        if (!ended(status)) setTimeout(poll, 2000);
      });
    }
    setTimeout(poll, 2000);
  }

  if (body.getAttribute("data-page") === "home") home();
  if (body.getAttribute("data-page") === "task") task();
})();
