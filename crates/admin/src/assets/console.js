"use strict";
// The console reads everything from the admin API (/admin/v1). Amounts arrive as decimal
// strings and are shown as they are; sums and chart heights use BigInt nano-units, never floats.
const API = "/admin/v1";
const main = document.getElementById("main");
let token = sessionStorage.getItem("tollgate-admin-token") || "";

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

class ApiError extends Error { constructor(status, body) { super((body && body.error && body.error.message) || ("HTTP " + status)); this.status = status; } }
// Each navigation is a generation: an answer that arrives after the operator moved on is
// dropped (a read's; a change's answer is still shown), so a slow page can never draw over the
// one asked for after it.
let generation = 0;
class Stale extends Error {}
async function api(path, options) {
  const asked = generation;
  const opts = Object.assign({ headers: {} }, options || {});
  opts.headers = Object.assign({ authorization: "Bearer " + token }, opts.headers);
  if (opts.json !== undefined) { opts.body = JSON.stringify(opts.json); opts.headers["content-type"] = "application/json"; }
  const r = await fetch(API + path, opts);
  const body = (r.headers.get("content-type") || "").includes("json") ? await r.json() : await r.text();
  if (asked !== generation && !opts.method) throw new Stale();
  if (r.status === 401) { signOut("The token was refused: " + ((body.error && body.error.message) || "")); throw new ApiError(401, body); }
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}

// --- exact money: decimal strings <-> BigInt nano-units
function nanos(s) {
  if (s === null || s === undefined) return 0n;
  const neg = String(s).startsWith("-");
  const [i, f = ""] = String(s).replace("-", "").split(".");
  const n = BigInt(i || "0") * 1000000000n + BigInt((f + "000000000").slice(0, 9));
  return neg ? -n : n;
}
function money(n) {
  const neg = n < 0n; if (neg) n = -n;
  const i = n / 1000000000n, f = (n % 1000000000n).toString().padStart(9, "0").replace(/0+$/, "");
  return (neg ? "-" : "") + i.toString() + (f ? "." + f : "");
}
function when(ms) { return ms === null || ms === undefined ? "" : new Date(ms).toLocaleString(); }
function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v !== null && v !== undefined) p.set(k, v);
  const s = p.toString(); return s ? "?" + s : "";
}
// Replaces the page, leaving out the parts that are absent (null, false, undefined).
function show(...nodes) { main.replaceChildren(...nodes.flat(Infinity).filter(n => n !== null && n !== undefined && n !== false)); }
function message(text, ok) { return h("div", { class: "msg " + (ok ? "ok" : "err"), role: ok ? "status" : "alert" }, text); }
function table(columns, rows, onRow) {
  const head = h("tr", {}, columns.map(c => h("th", { class: c.num ? "num" : null, scope: "col" }, c.label)));
  const body = rows.map(r => {
    const tr = h("tr", onRow ? { class: "link", tabindex: "0", onclick: () => onRow(r), onkeydown: e => { if (e.key === "Enter") onRow(r); } } : {},
      columns.map(c => h("td", { class: c.num ? "num" : c.wrap ? "wrap" : null }, c.get(r))));
    return tr;
  });
  return h("div", { class: "scroll" }, h("table", {}, h("thead", {}, head), h("tbody", {}, body.length ? body : h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, "Nothing yet")))));
}
// A bar chart of values (BigInt or Number) per label; the labels are HTML (an SVG stretched to
// the width would stretch its text too).
function barChart(label, points, format) {
  const w = 600, hgt = 160;
  const max = points.reduce((m, p) => (BigInt(p.value) > m ? BigInt(p.value) : m), 0n);
  const bw = points.length ? w / points.length : 0;
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${w} ${hgt}`, role: "img", "aria-label": `${label}, highest ${format(max)}`, preserveAspectRatio: "none" });
  chart.append(svg("line", { x1: 0, x2: w, y1: hgt - 0.5, y2: hgt - 0.5, stroke: "#d8dde3" }));
  points.forEach((p, i) => {
    const v = BigInt(p.value);
    const height = max > 0n ? Number((v * 1000n) / max) / 1000 * (hgt - 4) : 0;
    const rect = svg("rect", { class: "bar" + (p.bad ? " err" : ""), x: i * bw + bw * 0.1, y: hgt - height, width: Math.max(bw * 0.8, 0.5), height: height });
    rect.append(svg("title", {}, p.label + ": " + format(v)));
    chart.append(rect);
  });
  return h("figure", { class: "fig" }, h("figcaption", { class: "muted" }, label, " · highest ", h("strong", {}, format(max))), chart,
    points.length ? h("div", { class: "axis muted" }, h("span", {}, points[0].label), h("span", {}, points[points.length - 1].label)) : null);
}
// Every bucket of a period, oldest first: its start (ms) and its totals (zero where none).
function buckets(rows, bucket, hours) {
  const size = bucket === "hour" ? 3600000 : 86400000;
  // A time group's name is its start in RFC 3339.
  const byStart = new Map(perGroup(rows).map(g => [Date.parse(g.group), g]));
  const now = Date.now(), first = Math.floor((now - hours * 3600000) / size) * size;
  const out = [];
  for (let t = first; t <= now; t += size) out.push(Object.assign({ requests: 0, errors: 0, charge: 0n }, byStart.get(t), { group: t }));
  return out;
}
// Usage totals (one row per group and meter) summed per group, exactly.
function perGroup(rows) {
  const map = new Map();
  for (const r of rows) {
    const g = map.get(r.group) || { group: r.group, requests: 0, errors: 0, charge: 0n };
    g.requests += r.requests; g.errors += r.errors; g.charge += nanos(r.charge);
    map.set(r.group, g);
  }
  return [...map.values()];
}
function bucketLabel(group, bucket) {
  const d = new Date(group);
  if (isNaN(d)) return group;
  return bucket === "hour" ? d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit" }) : d.toLocaleDateString();
}

// --- pages
function signInPage(why) {
  document.getElementById("top").hidden = true;
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true, placeholder: "tga-…", "aria-describedby": "token-help" });
  const form = h("form", { class: "panel", onsubmit: async e => {
    e.preventDefault();
    token = input.value.trim();
    try { await api("/overview?hours=1"); sessionStorage.setItem("tollgate-admin-token", token); location.hash = "#/overview"; route(); }
    catch (err) { form.append(message(err.message)); }
  } },
    h("h1", {}, "Sign in to tollgate"),
    why ? message(why) : null,
    h("label", { for: "token" }, "Admin token", input),
    h("p", { id: "token-help", class: "muted" }, "Make one with: tollgate admin token create --name NAME"),
    h("button", { class: "b", type: "submit" }, "Sign in"));
  main.replaceChildren(h("div", { id: "signin" }, form));
  input.focus();
}
function signOut(why) { token = ""; sessionStorage.removeItem("tollgate-admin-token"); signInPage(why); }
document.getElementById("signout").addEventListener("click", () => signOut());

async function overviewPage() {
  const period = new URLSearchParams(location.hash.split("?")[1] || "").get("hours") || "24";
  const o = await api("/overview?hours=" + encodeURIComponent(period));
  const series = buckets(o.over_time, o.bucket, o.hours);
  const spend = series.reduce((s, b) => s + b.charge, 0n);
  const rate = o.requests ? (100 * o.errors / o.requests).toFixed(1) + " %" : "–";
  const select = h("select", { id: "period", onchange: e => { location.hash = "#/overview?hours=" + e.target.value; } },
    [["24", "Last 24 hours"], ["168", "Last 7 days"], ["720", "Last 30 days"]].map(([v, l]) => h("option", { value: v, selected: v === period }, l)));
  show(
    h("h1", {}, "Overview"),
    h("div", { class: "row" }, h("label", { for: "period" }, "Period", select)),
    h("div", { class: "cards" },
      card("Requests", o.requests), card("Spend", money(spend), "spend"), card("Error rate", rate),
      card("Open holds", o.open_holds.amount, null, `${o.open_holds.count} open`), card("Open leases", o.open_leases.amount, null, `${o.open_leases.count} open`),
      card("Tasks in flight", o.tasks_in_flight)),
    h("div", { class: "panel" }, barChart("Spend per " + o.bucket, series.map(b => ({ label: bucketLabel(Number(b.group), o.bucket), value: b.charge })), money)),
    h("div", { class: "panel" }, barChart("Requests per " + o.bucket, series.map(b => ({ label: bucketLabel(Number(b.group), o.bucket), value: b.requests })), String)),
    h("div", { class: "panel" }, barChart("Errors per " + o.bucket, series.map(b => ({ label: bucketLabel(Number(b.group), o.bucket), value: b.errors, bad: true })), String)),
    h("h2", {}, "By model"),
    table([{ label: "Model", get: r => r.group || "–" }, { label: "Requests", num: 1, get: r => r.requests }, { label: "Errors", num: 1, get: r => r.errors }, { label: "Spend", num: 1, get: r => money(r.charge) }], perGroup(o.by_model)),
    h("h2", {}, "By status"),
    table([{ label: "Status", get: r => r.group }, { label: "Requests", num: 1, get: r => r.requests }, { label: "Spend", num: 1, get: r => money(r.charge) }], perGroup(o.by_status)));
}
function card(label, value, id, note) { return h("div", { class: "card", "data-card": id || label }, h("div", { class: "l" }, label), h("div", { class: "v" }, value), note ? h("div", { class: "l" }, note) : null); }

async function accountsPage(params) {
  const search = params.get("search") || "";
  const before = params.get("before") || "";
  const page = await api("/accounts" + qs({ search, before, limit: 25 }));
  const searchInput = h("input", { id: "search", type: "search", value: search, placeholder: "name or id" });
  const name = h("input", { id: "new-name", required: true });
  const balance = h("input", { id: "new-balance", value: "0", inputmode: "decimal" });
  const created = h("div", { "aria-live": "polite" });
  show(
    h("h1", {}, "Accounts"),
    h("form", { class: "row", role: "search", onsubmit: e => { e.preventDefault(); location.hash = "#/accounts" + qs({ search: searchInput.value }); } },
      h("label", { for: "search" }, "Search", searchInput), h("button", { class: "s", type: "submit" }, "Search")),
    table([{ label: "Name", get: a => a.name }, { label: "Id", get: a => h("span", { class: "mono" }, a.id) },
           { label: "Balance", num: 1, get: a => a.balance }, { label: "Held", num: 1, get: a => a.held },
           { label: "Available", num: 1, get: a => a.available }, { label: "Status", get: a => a.disabled ? h("span", { class: "pill bad" }, "disabled") : h("span", { class: "pill good" }, "active") },
           { label: "Created", get: a => when(a.created_at) }], page.data, a => { location.hash = "#/accounts/" + encodeURIComponent(a.id); }),
    h("p", { class: "muted" }, `${page.total} account(s) match. `,
      page.next_cursor ? h("a", { href: "#/accounts" + qs({ search, before: page.next_cursor }) }, "Next page →") : null),
    h("h2", {}, "New account"),
    h("form", { class: "row", onsubmit: async e => {
      e.preventDefault();
      try {
        const r = await api("/accounts", { method: "POST", json: { name: name.value, balance: balance.value } });
        created.replaceChildren(message(`Created ${r.account.name}. Its first key, shown once:`, true), secretBox(r.key.secret),
          h("a", { href: "#/accounts/" + encodeURIComponent(r.account.id) }, "Open the account →"));
      } catch (err) { created.replaceChildren(message(err.message)); }
    } }, h("label", { for: "new-name" }, "Name", name), h("label", { for: "new-balance" }, "Opening balance", balance), h("button", { class: "b", type: "submit" }, "Create")),
    created);
}
function secretBox(secret) {
  const copy = h("button", { class: "s", type: "button", onclick: async () => { try { await navigator.clipboard.writeText(secret); copy.textContent = "Copied"; } catch (_) { copy.textContent = "Select and copy"; } } }, "Copy");
  return h("div", { class: "row" }, h("code", { class: "secret", "data-secret": "" }, secret), copy);
}

async function accountPage(id, params) {
  const a = await api("/accounts/" + encodeURIComponent(id));
  const ledger = await api(`/accounts/${encodeURIComponent(a.id)}/ledger` + qs({ limit: 25, before: params.get("before") || "" }));
  const usage = await api("/usage/summary" + qs({ account: a.id, group_by: "day", since: new Date(Math.floor(Date.now() / 86400000) * 86400000 - 30 * 86400000).toISOString() }));
  const people = await api(`/accounts/${encodeURIComponent(a.id)}/people`);
  const payments = await api("/payments" + qs({ account: a.id, limit: 10 }));
  const email = h("input", { id: "invite-email", type: "email", required: true, placeholder: "ada@example.com" });
  const out = h("div", { "aria-live": "polite" });
  const amount = h("input", { id: "credit-amount", required: true, inputmode: "decimal", placeholder: "10.00" });
  const reason = h("input", { id: "credit-reason", required: true, placeholder: "payment id or note" });
  const keyName = h("input", { id: "key-name", value: "default" });
  const reload = () => accountPage(id, params);
  const act = async (f, done) => { try { const r = await f(); await reload(); if (done) main.querySelector("#out").replaceChildren(...[].concat(done(r))); } catch (err) { main.querySelector("#out").replaceChildren(message(err.message)); } };
  // One idempotency key per filled-in form: a double click or a retry credits once.
  let idem = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random();
  const days = buckets(usage.data, "day", 30 * 24);
  show(
    h("p", {}, h("a", { href: "#/accounts" }, "← Accounts")),
    h("h1", {}, a.name, " ", a.disabled ? h("span", { class: "pill bad" }, "disabled") : h("span", { class: "pill good" }, "active")),
    h("p", { class: "mono muted" }, a.id),
    h("div", { class: "cards" }, card("Balance", a.balance, "balance"), card("Held", a.held), card("Leased", a.leased), card("Available", a.available, "available")),
    h("div", { id: "out" }, out),
    h("h2", {}, "Credit"),
    h("form", { class: "row", onsubmit: e => { e.preventDefault(); const body = { amount: amount.value, reason: reason.value };
      act(() => api(`/accounts/${encodeURIComponent(a.id)}/credits`, { method: "POST", json: body, headers: { "idempotency-key": idem } }),
          r => { idem = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()); return message(`Credited ${body.amount}; balance ${r.account.balance}`, true); }); } },
      h("label", { for: "credit-amount" }, "Amount", amount), h("label", { for: "credit-reason" }, "Reason", reason), h("button", { class: "b", type: "submit" }, "Credit")),
    h("h2", {}, "Keys"),
    table([{ label: "Name", get: k => k.name }, { label: "Id", get: k => h("span", { class: "mono" }, k.id) }, { label: "Prefix", get: k => h("span", { class: "mono" }, k.prefix + "…") },
           { label: "State", get: k => k.revoked ? h("span", { class: "pill bad" }, "revoked") : k.disabled ? h("span", { class: "pill bad" }, "disabled") : h("span", { class: "pill good" }, "active") },
           { label: "Created", get: k => when(k.created_at) },
           { label: "", get: k => k.revoked ? "" : h("span", {},
             h("button", { class: "s danger", type: "button", "data-revoke": k.id, onclick: () => { if (confirm("Revoke key " + k.id + " for good?")) act(() => api(`/keys/${k.id}/revoke`, { method: "POST" }), () => message("Revoked " + k.id, true)); } }, "Revoke"), " ",
             h("button", { class: "s", type: "button", onclick: () => { if (confirm("Replace key " + k.id + "? The old one stops working.")) act(() => api(`/keys/${k.id}/rotate`, { method: "POST" }), r => [message("The new key, shown once:", true), secretBox(r.secret)]); } }, "Rotate")) }], a.keys),
    h("form", { class: "row", onsubmit: e => { e.preventDefault(); act(() => api(`/accounts/${encodeURIComponent(a.id)}/keys`, { method: "POST", json: { name: keyName.value } }), r => [message("The new key, shown once:", true), secretBox(r.secret)]); } },
      h("label", { for: "key-name" }, "Label", keyName), h("button", { class: "b", type: "submit" }, "Add key")),
    h("h2", {}, "People (customer portal)"),
    table([{ label: "Email", get: p => p.email }, { label: "Name", get: p => p.name },
           { label: "State", get: p => p.active ? h("span", { class: "pill good" }, "active") : h("span", { class: "pill" }, "invited") },
           { label: "TOTP", get: p => p.totp ? "on" : "off" }, { label: "Since", get: p => when(p.created_at) },
           { label: "", get: p => h("button", { class: "s danger", type: "button", onclick: () => { if (confirm("Remove " + p.email + "? Their sessions end at once.")) act(() => api(`/people/${encodeURIComponent(p.id)}`, { method: "DELETE" }), () => message("Removed " + p.email, true)); } }, "Remove") }], people.data),
    h("form", { class: "row", onsubmit: e => { e.preventDefault(); act(() => api(`/accounts/${encodeURIComponent(a.id)}/people`, { method: "POST", json: { email: email.value } }),
      r => [message(`Invited ${r.person.email}. Send them this link; it works once, until ${when(r.expires_at)}:`, true), secretBox(r.invite_url)]); } },
      h("label", { for: "invite-email" }, "Email", email), h("button", { class: "b", type: "submit" }, "Invite")),
    h("h2", {}, "Payments"),
    payments.data.length ? paymentsTable(payments.data) : h("p", { class: "muted" }, "No payments through the provider."),
    payments.next_cursor ? h("p", {}, h("a", { href: "#/payments?account=" + encodeURIComponent(a.id) }, "All payments →")) : null,
    h("h2", {}, "Status"),
    h("div", { class: "row" }, h("button", { class: "s" + (a.disabled ? "" : " danger"), type: "button", onclick: () => act(() => api(`/accounts/${encodeURIComponent(a.id)}/${a.disabled ? "enable" : "disable"}`, { method: "POST" })) }, a.disabled ? "Enable account" : "Disable account")),
    h("h2", {}, "Policy"),
    policyView(a.policy),
    policyForm(a.id, act),
    h("h2", {}, "Spend, last 30 days"),
    h("div", { class: "panel" }, barChart("Spend per day", days.map(d => ({ label: bucketLabel(Number(d.group), "day"), value: d.charge })), money)),
    h("h2", {}, "Ledger"),
    table([{ label: "Time", get: r => when(r.created_at) }, { label: "Kind", get: r => r.kind }, { label: "Amount", num: 1, get: r => r.amount },
           { label: "Balance after", num: 1, get: r => r.balance_after }, { label: "Model", get: r => r.model || "" }, { label: "Note", get: r => r.note || r.quantity || "" },
           { label: "", get: r => r.kind === "charge" && r.request_id ? h("a", { href: "#/requests/" + encodeURIComponent(r.request_id), "data-why": r.id }, "Why this charge") : "" }], ledger.data),
    ledger.next_cursor ? h("p", {}, h("a", { href: `#/accounts/${encodeURIComponent(a.id)}` + qs({ before: ledger.next_cursor }) }, "Older rows →")) : null);
}

function policyView(p) {
  const set = Object.entries(p).filter(([k, v]) => k !== "account" && k !== "key" && v !== null);
  if (!set.length) return h("p", { class: "muted" }, "No policy: every model and endpoint, from anywhere, at list prices, without limits.");
  return h("dl", { class: "panel policy" }, set.map(([k, v]) => [h("dt", {}, k), h("dd", { class: "mono" }, typeof v === "object" ? JSON.stringify(v) : String(v))]));
}
function policyForm(id, act) {
  const fields = [["models", "Models (comma-separated)"], ["endpoints", "Endpoints"], ["group", "Price group"], ["rpm", "Requests/min"],
                  ["concurrency", "Concurrency"], ["daily_budget", "Daily budget"], ["monthly_budget", "Monthly budget"], ["expires", "Expires (RFC 3339)"]];
  const inputs = Object.fromEntries(fields.map(([k]) => [k, h("input", { id: "p-" + k, size: 12 })]));
  const lists = ["models", "endpoints"], numbers = ["rpm", "concurrency"];
  return h("form", { class: "row", onsubmit: e => {
    e.preventDefault();
    const edit = {};
    for (const [k, el] of Object.entries(inputs)) {
      const v = el.value.trim();
      if (!v) continue;
      edit[k] = lists.includes(k) ? v.split(",").map(x => x.trim()) : numbers.includes(k) ? Number(v) : v;
    }
    act(() => api(`/accounts/${encodeURIComponent(id)}/policy`, { method: "PATCH", json: edit }), () => message("Policy saved", true));
  } }, fields.map(([k, l]) => h("label", { for: "p-" + k }, l, inputs[k])), h("button", { class: "b", type: "submit" }, "Set"),
    h("button", { class: "s danger", type: "button", onclick: () => { if (confirm("Remove the whole policy?")) act(() => api(`/accounts/${encodeURIComponent(id)}/policy`, { method: "DELETE" }), () => message("Policy removed", true)); } }, "Clear policy"));
}

const ENDPOINTS = ["", "embeddings", "speech", "t2a", "transcriptions", "speech_to_text", "clip_tasks", "video_generations", "native", "chat", "responses", "realtime", "live", "images", "videos"];
async function usagePage(params) {
  const f = Object.fromEntries(["account", "key", "model", "endpoint", "since", "until", "group_by", "before"].map(k => [k, params.get(k) || ""]));
  const inputs = {};
  const field = (name, label, el) => { inputs[name] = el; el.id = "u-" + name; el.value = f[name]; return h("label", { for: el.id }, label, el); };
  const form = h("form", { class: "row", onsubmit: e => { e.preventDefault(); const p = {}; for (const [k, el] of Object.entries(inputs)) p[k] = el.value; location.hash = "#/usage" + qs(p); } },
    field("account", "Account", h("input", {})), field("key", "Key", h("input", {})), field("model", "Model", h("input", {})),
    field("endpoint", "Endpoint", h("select", {}, ENDPOINTS.map(e => h("option", { value: e }, e || "any")))),
    field("since", "Since", h("input", { type: "date" })), field("until", "Until", h("input", { type: "date" })),
    field("group_by", "Group by", h("select", {}, ["", "day", "hour", "model", "key", "endpoint", "account", "status"].map(g => h("option", { value: g }, g || "(records)")))),
    h("button", { class: "b", type: "submit" }, "Show"),
    h("button", { class: "s", type: "button", id: "csv", onclick: () => downloadCsv(f) }, "Download CSV"));
  const filters = { account: f.account, key: f.key, model: f.model, endpoint: f.endpoint, since: f.since, until: f.until };
  let result;
  if (f.group_by) {
    const s = await api("/usage/summary" + qs(Object.assign({ group_by: f.group_by }, filters)));
    const rows = perGroup(s.data);
    const timeish = f.group_by === "day" || f.group_by === "hour";
    result = [h("div", { class: "panel" }, barChart("Spend per " + f.group_by, rows.map(r => ({ label: timeish ? bucketLabel(Date.parse(r.group), f.group_by) : r.group, value: r.charge })), money)),
      table([{ label: f.group_by, get: r => timeish ? bucketLabel(Date.parse(r.group), f.group_by) : r.group }, { label: "Requests", num: 1, get: r => r.requests }, { label: "Errors", num: 1, get: r => r.errors }, { label: "Spend", num: 1, get: r => money(r.charge) }], rows)];
  } else {
    const page = await api("/usage" + qs(Object.assign({ limit: 50, before: f.before }, filters)));
    result = [table([{ label: "Time", get: r => when(r.created_at) }, { label: "Account", get: r => h("a", { href: "#/accounts/" + r.account_id, class: "mono" }, r.account_id) },
      { label: "Endpoint", get: r => r.endpoint }, { label: "Model", get: r => r.model || "" }, { label: "Status", get: r => h("span", { class: "pill" + (r.status >= 400 ? " bad" : "") }, r.status) },
      { label: "Units", num: 1, get: r => r.units ? `${r.units} ${r.meter || ""}` : "" }, { label: "Charge", num: 1, get: r => r.charge }, { label: "ms", num: 1, get: r => r.latency_ms },
      { label: "Request", get: r => r.request_id && r.hold_id ? h("a", { href: "#/requests/" + encodeURIComponent(r.request_id), class: "mono", title: "Why this charge" }, r.request_id) : h("span", { class: "mono" }, r.request_id || r.task_id || "") }], page.data),
      page.next_cursor ? h("p", {}, h("a", { href: "#/usage" + qs(Object.assign({}, f, { before: page.next_cursor })) }, "Older records →")) : null];
  }
  show(h("h1", {}, "Usage"), form, h("div", { id: "usage-result" }, result));
}
async function downloadCsv(f) {
  const r = await fetch(API + "/usage.csv" + qs({ account: f.account, key: f.key, model: f.model, endpoint: f.endpoint, since: f.since, until: f.until }), { headers: { authorization: "Bearer " + token } });
  if (!r.ok) { main.append(message("CSV: HTTP " + r.status)); return; }
  const url = URL.createObjectURL(await r.blob());
  const a = h("a", { href: url, download: "usage.csv" }); document.body.append(a); a.click(); a.remove(); URL.revokeObjectURL(url);
}

// Why a request was charged what it was (GET /admin/v1/requests/{id}; docs/architecture.md,
// "Explanations"): each charge's quantity and how it was measured, price version and tariff,
// multiplier, the exact product and its rounding, hold and bound.
async function requestPage(id) {
  const r = await api("/requests/" + encodeURIComponent(id));
  const row = (label, value) => [h("dt", {}, label), h("dd", {}, value === null || value === undefined || value === "" ? "—" : value)];
  const charges = r.data.map(c => h("section", { class: "panel", "data-charge": c.ledger_id },
    h("h2", {}, c.model, " ", h("span", { class: "mono muted" }, c.ledger_id)),
    h("dl", { class: "why" },
      row("Quantity", `${c.units} (${c.meter})`),
      row("Measured by", c.measured ? c.measured.replace("_", " ") : "unknown (record pruned)"),
      c.note ? row("Note", c.note) : null,
      row("Price", `${c.model}@${c.price_version ?? "—"}` + (c.price_reconstructed ? " (reconstructed at the upgrade)" : "")),
      row("Tariff", c.tariff ? JSON.stringify(c.tariff) : null),
      row("Price group", `${c.price_group || "list prices"} × ${c.multiplier}`),
      row("Exact", c.exact),
      row("Rounding", `${c.rounding} → ${c.priced ?? "—"}`),
      row("Hold", c.hold),
      row("Bound", c.bound ? `${c.bound} (${c.bound_basis || "—"})` + (c.cut_by_bound ? " — the bound cut the price" : "") : null),
      c.anomaly ? row("Anomaly", c.anomaly) : null,
      nanos(c.loss) > 0n ? row("Operator's loss", c.loss) : null,
      row("Charged", h("strong", {}, c.charged)))));
  show(h("p", {}, h("a", { href: "#/usage" }, "← Usage")),
    h("h1", {}, "Why this charge: ", h("span", { class: "mono" }, id)),
    h("p", {}, `Charged ${r.charged} in ${r.data.length} charge(s), from ${r.records} usage record(s).`),
    r.disagree.length ? message("These charges do not re-derive from their price version: " + r.disagree.join(", ")) : null,
    charges.length ? charges : h("p", { class: "muted" }, "Nothing was charged (refused, released, or a task still running)."));
}
async function tasksPage(params) {
  const state = params.get("state") || "", account = params.get("account") || "";
  const page = await api("/tasks" + qs({ state, account, limit: 50, before: params.get("before") || "" }));
  const stateSel = h("select", { id: "t-state" }, ["", "submitting", "queued", "running", "succeeded", "failed"].map(s => h("option", { value: s, selected: s === state }, s || "any")));
  const acct = h("input", { id: "t-account", value: account });
  show(h("h1", {}, "Tasks"),
    h("form", { class: "row", onsubmit: e => { e.preventDefault(); location.hash = "#/tasks" + qs({ state: stateSel.value, account: acct.value }); } },
      h("label", { for: "t-state" }, "State", stateSel), h("label", { for: "t-account" }, "Account", acct), h("button", { class: "b", type: "submit" }, "Show")),
    table([{ label: "Created", get: t => when(t.created_at) }, { label: "Id", get: t => h("span", { class: "mono" }, t.id) }, { label: "Model", get: t => t.model },
           { label: "State", get: t => h("span", { class: "pill" + (t.state === "failed" ? " bad" : t.state === "succeeded" ? " good" : "") }, t.state) },
           { label: "Progress", num: 1, get: t => t.progress + " %" }, { label: "Account", get: t => h("span", { class: "mono" }, t.account_id) }],
          page.data, t => { location.hash = "#/tasks/" + encodeURIComponent(t.id); }),
    page.next_cursor ? h("p", {}, h("a", { href: "#/tasks" + qs({ state, account, before: page.next_cursor }) }, "Older tasks →")) : null);
}
async function sessionsPage(params) {
  const account = params.get("account") || "";
  const page = await api("/sessions" + qs({ account, limit: 100 }));
  const acct = h("input", { id: "s-account", value: account });
  const now = Date.now();
  show(h("h1", {}, "Live sessions"),
    h("p", { class: "muted" }, "Voice sessions open now (OpenAI Realtime, Gemini Live), newest first: each response is charged as it is done."),
    h("form", { class: "row", onsubmit: e => { e.preventDefault(); location.hash = "#/sessions" + qs({ account: acct.value }); } },
      h("label", { for: "s-account" }, "Account", acct), h("button", { class: "b", type: "submit" }, "Show")),
    table([{ label: "Opened", get: s => when(s.created_at) }, { label: "Id", get: s => h("span", { class: "mono" }, s.id) }, { label: "Model", get: s => s.model },
           { label: "Account", get: s => h("a", { href: "#/accounts/" + encodeURIComponent(s.account_id), class: "mono" }, s.account_id) },
           { label: "Responses", num: 1, get: s => s.responses }, { label: "Charged", num: 1, get: s => money(nanos(s.charged)) },
           { label: "Minutes", num: 1, get: s => ((now - s.created_at) / 60000).toFixed(1) },
           { label: "Last beat", get: s => h("span", { class: "pill" + (now - s.heartbeat_at > page.stale_after_seconds * 1000 ? " bad" : " good") }, Math.round((now - s.heartbeat_at) / 1000) + " s ago") }],
          page.data));
}
async function taskPage(id) {
  const t = await api("/tasks/" + encodeURIComponent(id));
  const live = ["submitting", "queued", "running"].includes(t.state);
  show(h("p", {}, h("a", { href: "#/tasks" }, "← Tasks")), h("h1", {}, "Task ", h("span", { class: "mono" }, t.id)),
    h("div", { class: "cards" }, card("State", t.state), card("Progress", t.progress + " %"), card("Model", t.model), card("Channel", t.channel)),
    h("div", { id: "out" }),
    live ? h("div", { class: "row" }, h("button", { class: "s danger", type: "button", onclick: async () => {
      if (!confirm("Cancel task " + t.id + " and refund it?")) return;
      try { await api(`/tasks/${encodeURIComponent(t.id)}/cancel`, { method: "POST" }); await taskPage(id); main.querySelector("#out").replaceChildren(message("Cancelled and refunded", true)); }
      catch (err) { main.querySelector("#out").replaceChildren(message(err.message)); } } }, "Cancel and refund")) : null,
    h("h2", {}, "History"),
    table([{ label: "Time", get: e => when(e.at) }, { label: "State", get: e => e.state }, { label: "Upstream", get: e => e.upstream_status || "" },
           { label: "Progress", num: 1, get: e => e.progress === null ? "" : e.progress + " %" }, { label: "Detail", get: e => e.detail || "" }], t.history),
    h("h2", {}, "Request"), h("pre", { class: "panel mono" }, JSON.stringify(t.request, null, 2)),
    t.result ? [h("h2", {}, "Result"), h("pre", { class: "panel mono" }, JSON.stringify(t.result, null, 2))] : null,
    t.error ? [h("h2", {}, "Error"), h("pre", { class: "panel mono" }, JSON.stringify(t.error, null, 2))] : null);
}

async function channelsPage() {
  const c = await api("/channels");
  const pct = x => x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %";
  const ms = x => x === null || x === undefined ? "–" : x + " ms";
  show(h("h1", {}, "Channels"), h("div", { id: "out" }),
    table([{ label: "Name", get: x => x.name }, { label: "Format", get: x => x.format }, { label: "Success", num: 1, get: x => pct(x.success_rate) },
           { label: "Calls", num: 1, get: x => x.successes + x.failures }, { label: "p50", num: 1, get: x => ms(x.latency_ms.p50) }, { label: "p95", num: 1, get: x => ms(x.latency_ms.p95) },
           { label: "p99", num: 1, get: x => ms(x.latency_ms.p99) }, { label: "In flight", num: 1, get: x => `${x.in_flight}/${x.max_concurrency}` },
           { label: "Circuit", get: x => h("span", { class: "pill" + (x.circuit === "closed" ? " good" : " bad") }, x.circuit) },
           { label: "", get: x => h("button", { class: "s" + (x.disabled ? "" : " danger"), type: "button", onclick: async () => {
             try { await api(`/channels/${encodeURIComponent(x.name)}/${x.disabled ? "enable" : "disable"}`, { method: "POST" }); await channelsPage(); }
             catch (err) { main.querySelector("#out").replaceChildren(message(err.message)); } } }, x.disabled ? "Switch on" : "Switch off") }], c.data));
}
async function changesPage(params) {
  const page = await api("/changes" + qs({ limit: 50, before: params.get("before") || "", target: params.get("target") || "" }));
  show(h("h1", {}, "Changes"), h("p", { class: "muted" }, "Every change made through the admin API or the command line."),
    table([{ label: "Time", get: c => when(c.created_at) }, { label: "Who", get: c => c.actor }, { label: "What", get: c => c.action }, { label: "On", get: c => h("span", { class: "mono" }, c.target) },
           { label: "Before → after", wrap: 1, get: c => h("span", { class: "mono" }, `${c.before ? JSON.stringify(c.before) : "–"} → ${c.after ? JSON.stringify(c.after) : "–"}`) }], page.data),
    page.next_cursor ? h("p", {}, h("a", { href: "#/changes" + qs({ before: page.next_cursor }) }, "Older →")) : null);
}

async function alertsPage(params) {
  const state = params.get("state") || "";
  const [rules, deliveries] = await Promise.all([api("/alerts"), api("/alerts/deliveries" + qs({ limit: 50, state }))]);
  const stateSel = h("select", { id: "delivery-state", onchange: e => { location.hash = "#/alerts" + qs({ state: e.target.value }); } },
    ...["", "pending", "delivered", "failed"].map(s => h("option", { value: s, selected: s === state ? "" : null }, s || "any")));
  show(h("h1", {}, "Alerts"),
    h("h2", {}, "Rules"),
    table([{ label: "Rule", get: r => r.name }, { label: "When", get: r => r.rule.when }, { label: "From", get: r => r.source },
           { label: "Firing on", wrap: 1, get: r => r.firing.length ? h("span", { class: "mono" }, r.firing.map(f => f.subject).join(", ")) : h("span", { class: "pill good" }, "quiet") },
           { label: "Posts to", wrap: 1, get: r => h("span", { class: "mono" }, r.rule.webhook_url) }], rules.data),
    h("h2", {}, "Deliveries"),
    h("div", { class: "row" }, h("label", {}, "State", stateSel)),
    table([{ label: "Created", get: d => when(Date.parse(d.created_at)) }, { label: "Rule", get: d => d.rule },
           { label: "Event", get: d => d.payload && d.payload.type ? d.payload.type : (d.format === "slack" ? "slack" : "") },
           { label: "State", get: d => h("span", { class: "pill" + (d.state === "failed" ? " bad" : d.state === "delivered" ? " good" : "") }, d.state) },
           { label: "Attempts", num: 1, get: d => d.attempts }, { label: "Id", get: d => h("span", { class: "mono" }, d.id) }],
          deliveries.data, d => { location.hash = "#/alerts/deliveries/" + encodeURIComponent(d.id); }));
}
async function deliveryPage(id) {
  const d = await api("/alerts/deliveries/" + encodeURIComponent(id));
  show(h("p", {}, h("a", { href: "#/alerts" }, "← Alerts")), h("h1", {}, "Delivery ", h("span", { class: "mono" }, d.id)),
    h("div", { class: "cards" }, card("State", d.state), card("Attempts", String(d.attempts)), card("Rule", d.rule), card("Format", d.format)),
    h("p", { class: "muted" }, "Posted to ", h("span", { class: "mono" }, d.url), " as webhook-id ", h("span", { class: "mono" }, d.id), ": a redelivery carries the same id, so a receiver that already has it drops it."),
    h("div", { id: "out" }),
    h("div", { class: "row" }, h("button", { class: "s", type: "button", onclick: async () => {
      try { await api(`/alerts/deliveries/${encodeURIComponent(d.id)}/redeliver`, { method: "POST" }); await deliveryPage(id); main.querySelector("#out").replaceChildren(message("Redelivery queued: it is posted within a second", true)); }
      catch (err) { main.querySelector("#out").replaceChildren(message(err.message)); } } }, "Redeliver")),
    h("h2", {}, "Attempts"),
    table([{ label: "#", num: 1, get: a => a.attempt }, { label: "Time", get: a => when(Date.parse(a.started_at)) }, { label: "Took", num: 1, get: a => a.duration_ms + " ms" },
           { label: "Replica", get: a => h("span", { class: "mono" }, a.replica) },
           { label: "Answer", get: a => a.status === null ? h("span", { class: "pill bad" }, "none") : h("span", { class: "pill" + (a.status < 300 ? " good" : " bad") }, String(a.status)) },
           { label: "Error", wrap: 1, get: a => h("span", { class: "mono" }, a.error || "") }], d.history || []),
    h("h2", {}, "Payload"), h("pre", { class: "panel mono" }, JSON.stringify(d.payload, null, 2)));
}

// --- redemption codes (docs/operations.md, "Redemption codes")
function batchState(b) {
  if (b.revoked_at) return h("span", { class: "pill bad" }, "revoked");
  if (b.expires_at && b.expires_at <= Date.now()) return h("span", { class: "pill" }, "expired");
  return h("span", { class: "pill good" }, "live");
}
async function codesPage() {
  const page = await api("/code-batches");
  const amount = h("input", { id: "codes-amount", required: true, inputmode: "decimal", placeholder: "10" });
  const count = h("input", { id: "codes-count", required: true, inputmode: "numeric", value: "10" });
  const expires = h("input", { id: "codes-expires", placeholder: "90d, 2027-06-30 or empty" });
  const name = h("input", { id: "codes-name", placeholder: "launch" });
  const issued = h("div", { "aria-live": "polite" });
  show(h("h1", {}, "Redemption codes"),
    table([{ label: "Name", get: b => b.name }, { label: "Id", get: b => h("span", { class: "mono" }, b.id) },
           { label: "Amount", num: 1, get: b => b.amount }, { label: "Issued", num: 1, get: b => b.count }, { label: "Redeemed", num: 1, get: b => b.redeemed },
           { label: "Expires", get: b => b.expires_at ? when(b.expires_at) : "never" }, { label: "State", get: batchState },
           { label: "Created", get: b => when(b.created_at) }], page.data, b => { location.hash = "#/codes/" + encodeURIComponent(b.id); }),
    h("h2", {}, "New batch"),
    h("form", { class: "row", onsubmit: async e => {
      e.preventDefault();
      const n = Number(count.value);
      try {
        const r = await api("/code-batches", { method: "POST", json: { amount: amount.value, count: Number.isInteger(n) && n > 0 ? n : 0, expires: expires.value || null, name: name.value || null } });
        // The codes exist in this answer only: offered as a file, line N being code N.
        const file = new Blob([r.codes.join("\n") + "\n"], { type: "text/plain" });
        const link = h("a", { href: URL.createObjectURL(file), download: `${r.batch.id}.txt`, class: "b" }, `Download ${r.codes.length} codes`);
        issued.replaceChildren(message(`Issued ${r.batch.id}: ${r.codes.length} codes of ${r.batch.amount}. They are shown here once and kept nowhere else — download them now.`, true),
          h("div", { class: "row" }, link), h("pre", { class: "panel mono", id: "issued-codes" }, r.codes.join("\n")));
      } catch (err) { issued.replaceChildren(message(err.message)); }
    } }, h("label", { for: "codes-amount" }, "Amount each", amount), h("label", { for: "codes-count" }, "How many", count),
         h("label", { for: "codes-expires" }, "Expires", expires), h("label", { for: "codes-name" }, "Name", name), h("button", { class: "b", type: "submit" }, "Issue")),
    issued);
}
async function codeBatchPage(id) {
  const r = await api("/code-batches/" + encodeURIComponent(id));
  const b = r.batch;
  show(h("p", {}, h("a", { href: "#/codes" }, "← Codes")), h("h1", {}, b.name, " ", batchState(b)), h("p", { class: "mono muted" }, b.id),
    h("div", { class: "cards" }, card("Each code", b.amount), card("Issued", String(b.count)), card("Redeemed", String(b.redeemed)), card("Expires", b.expires_at ? when(b.expires_at) : "never")),
    h("p", { class: "muted" }, `Issued by ${b.created_by} on ${when(b.created_at)}. A code's number is its line in the batch's file.`),
    h("div", { id: "out" }),
    b.revoked_at ? h("p", {}, "Revoked on ", when(b.revoked_at), ": its codes not yet redeemed redeem nothing.") :
      h("div", { class: "row" }, h("button", { class: "s", type: "button", onclick: async () => {
        if (!confirm(`Revoke ${b.id}? Its ${b.count - b.redeemed} codes not yet redeemed will redeem nothing.`)) return;
        try { await api(`/code-batches/${encodeURIComponent(b.id)}/revoke`, { method: "POST" }); await codeBatchPage(id); }
        catch (err) { main.querySelector("#out").replaceChildren(message(err.message)); } } }, "Revoke")),
    h("h2", {}, "Redeemed"),
    table([{ label: "Code #", num: 1, get: x => x.number }, { label: "When", get: x => when(x.redeemed_at) },
           { label: "Account", get: x => h("a", { href: "#/accounts/" + encodeURIComponent(x.account_id), class: "mono" }, x.account_id) },
           { label: "Ledger row", get: x => h("span", { class: "mono" }, x.ledger_id) }, { label: "From", get: x => h("span", { class: "mono" }, x.address || "") }], r.redemptions));
}

// --- payments (docs/operations.md, "Payments")
function paymentState(p) {
  const tone = { paid: " good", failed: " bad", unpaid: "" }[p.status] ?? "";
  const pills = [h("span", { class: "pill" + tone }, p.status)];
  if (p.refunded_minor > 0) pills.push(" ", h("span", { class: "pill bad" }, p.refunded_minor >= p.amount_minor ? "refunded" : "part refunded"));
  if (p.dispute) pills.push(" ", h("span", { class: "pill" + (p.dispute === "won" ? " good" : " bad") }, "chargeback " + p.dispute));
  return h("span", {}, ...pills);
}
function paymentsTable(rows) {
  return table([{ label: "When", get: p => when(p.created_at) }, { label: "Id", get: p => h("span", { class: "mono" }, p.id) },
                { label: "Account", get: p => h("a", { href: "#/accounts/" + encodeURIComponent(p.account_id), class: "mono" }, p.account_id) },
                { label: "Paid", num: 1, get: p => `${p.amount_minor} ${p.currency} (minor units)` }, { label: "Buys", num: 1, get: p => p.amount },
                { label: "How", get: p => p.automatic ? "automatic" : "portal" }, { label: "State", get: paymentState },
                { label: "Provider's", get: p => h("span", { class: "mono" }, p.intent_id || p.checkout_id || "") }], rows,
               p => { location.hash = "#/payments/" + encodeURIComponent(p.id); });
}
async function paymentsPage(params) {
  const q = new URLSearchParams();
  if (params.get("account")) q.set("account", params.get("account"));
  if (params.get("before")) q.set("before", params.get("before"));
  const page = await api("/payments?" + q);
  const next = page.next_cursor ? h("p", {}, h("a", { href: "#/payments?" + new URLSearchParams({ ...Object.fromEntries(q), before: page.next_cursor }) }, "Older →")) : null;
  show(h("h1", {}, "Payments"),
    h("p", { class: "muted" }, "Top-ups through the payment provider. Only its signed webhook credits; a refund or chargeback after the money was spent is debited in full and marked in the ledger."),
    paymentsTable(page.data), next);
}
async function paymentPage(id) {
  const p = await api("/payments/" + encodeURIComponent(id));
  show(h("p", {}, h("a", { href: "#/payments" }, "← Payments")), h("h1", {}, p.id, " ", paymentState(p)),
    h("div", { class: "cards" }, card("Paid", `${p.amount_minor} ${p.currency}`), card("Buys", p.amount), card("Refunded", `${p.refunded_minor} ${p.currency}`), card("How", p.automatic ? "automatic" : "portal")),
    h("dl", { class: "panel" },
      h("dt", {}, "Account"), h("dd", {}, h("a", { href: "#/accounts/" + encodeURIComponent(p.account_id), class: "mono" }, p.account_id)),
      h("dt", {}, "Started by"), h("dd", { class: "mono" }, p.person_id || "the automatic top-up"),
      h("dt", {}, "Provider's checkout"), h("dd", { class: "mono" }, p.checkout_id || ""),
      h("dt", {}, "Provider's payment"), h("dd", { class: "mono" }, p.intent_id || ""),
      h("dt", {}, "Credit"), h("dd", { class: "mono" }, p.ledger_id || ""),
      h("dt", {}, "Created"), h("dd", {}, when(p.created_at)), h("dt", {}, "Credited"), h("dd", {}, when(p.paid_at)),
      p.failure ? [h("dt", {}, "Why it failed"), h("dd", {}, p.failure)] : null));
}

async function route() {
  generation++;
  if (!token) return signInPage();
  document.getElementById("top").hidden = false;
  const [path, query] = (location.hash.slice(1) || "/overview").split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll("header nav a")) a.setAttribute("aria-current", a.getAttribute("href").slice(2) === parts[0] ? "page" : "false");
  main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  try {
    if (parts[0] === "accounts" && parts[1]) await accountPage(parts[1], params);
    else if (parts[0] === "accounts") await accountsPage(params);
    else if (parts[0] === "usage") await usagePage(params);
    else if (parts[0] === "requests" && parts[1]) await requestPage(parts[1]);
    else if (parts[0] === "tasks" && parts[1]) await taskPage(parts[1]);
    else if (parts[0] === "tasks") await tasksPage(params);
    else if (parts[0] === "sessions") await sessionsPage(params);
    else if (parts[0] === "channels") await channelsPage();
    else if (parts[0] === "changes") await changesPage(params);
    else if (parts[0] === "alerts" && parts[1] === "deliveries" && parts[2]) await deliveryPage(parts[2]);
    else if (parts[0] === "alerts") await alertsPage(params);
    else if (parts[0] === "codes" && parts[1]) await codeBatchPage(parts[1]);
    else if (parts[0] === "codes") await codesPage();
    else if (parts[0] === "payments" && parts[1]) await paymentPage(parts[1]);
    else if (parts[0] === "payments") await paymentsPage(params);
    else await overviewPage();
    document.title = "tollgate · " + (parts[0] || "overview");
  } catch (err) {
    if (!(err instanceof Stale) && err.status !== 401) main.replaceChildren(message(err.message));
  }
}
window.addEventListener("hashchange", route);
route();
