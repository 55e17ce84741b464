"use strict";
// The customer portal reads everything from /portal/v1 with its session cookie (HttpOnly: this
// script never sees it) and sends the session's CSRF token on every change. Every node is built
// with textContent, never innerHTML. Amounts are decimal strings, shown as they are.
const API = "/portal/v1";
const main = document.getElementById("main");
let csrf = "";

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
class ApiError extends Error { constructor(status, body) { super((body && body.error && body.error.message) || ("HTTP " + status)); this.status = status; this.code = body && body.error && body.error.code; } }
async function api(path, options) {
  const opts = Object.assign({ headers: {}, credentials: "same-origin" }, options || {});
  if (opts.json !== undefined) { opts.body = JSON.stringify(opts.json); opts.headers["content-type"] = "application/json"; }
  if (opts.method && opts.method !== "GET") { opts.headers["x-csrf-token"] = csrf; opts.headers["content-type"] = "application/json"; }
  const r = await fetch(API + path, opts);
  const body = (r.headers.get("content-type") || "").includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}
function show(...nodes) { main.replaceChildren(...nodes.flat(Infinity).filter(n => n !== null && n !== undefined && n !== false)); }
function message(text, ok) { return h("div", { class: "msg " + (ok ? "ok" : "err"), role: ok ? "status" : "alert" }, text); }
function when(ms) { return ms === null || ms === undefined ? "" : new Date(ms).toLocaleString(); }
function card(label, value, id) { return h("div", { class: "card", "data-card": id || label }, h("div", { class: "l" }, label), h("div", { class: "v" }, value)); }
function table(columns, rows) {
  const head = h("tr", {}, columns.map(c => h("th", { class: c.num ? "num" : null, scope: "col" }, c.label)));
  const body = rows.map(r => h("tr", {}, columns.map(c => h("td", { class: c.num ? "num" : c.wrap ? "wrap" : null }, c.get(r)))));
  return h("div", { class: "scroll" }, h("table", {}, h("thead", {}, head), h("tbody", {}, body.length ? body : h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, "Nothing yet")))));
}
const KIND = { credit: "Credit", adjustment: "Correction", charge: "Charge", redemption: "Code redeemed", payment: "Top-up", refund: "Refund or chargeback" };

function signInPage(note) {
  document.getElementById("top").hidden = true;
  const email = h("input", { id: "email", type: "email", autocomplete: "username", required: true });
  const password = h("input", { id: "password", type: "password", autocomplete: "current-password", required: true });
  const code = h("input", { id: "code", inputmode: "numeric", autocomplete: "one-time-code", placeholder: "123456" });
  const codeLabel = h("label", { for: "code", hidden: true }, "Code from your authenticator app (or a recovery code)", code);
  const out = h("div", { "aria-live": "polite" }, note ? message(note, true) : null);
  show(h("div", { class: "panel narrow" }, h("h1", {}, "Sign in"), out,
    h("form", { class: "stack", onsubmit: async e => {
      e.preventDefault();
      const json = { email: email.value, password: password.value };
      const typed = code.value.trim();
      if (typed) { if (/^\d{6}$/.test(typed.replace(/\s/g, ""))) json.code = typed; else json.recovery_code = typed; }
      try { const s = await api("/sessions", { method: "POST", json }); csrf = s.csrf_token; history.replaceState(null, "", "#/home"); route(); }
      catch (err) {
        if (err.code === "totp_required") { codeLabel.hidden = false; code.focus(); out.replaceChildren(message(err.message, true)); }
        else out.replaceChildren(message(err.message));
      }
    } }, h("label", { for: "email" }, "Email", email), h("label", { for: "password" }, "Password", password), codeLabel,
      h("button", { class: "b", type: "submit" }, "Sign in"))));
  email.focus();
}

function invitePage(token) {
  document.getElementById("top").hidden = true;
  const password = h("input", { id: "new-password", type: "password", autocomplete: "new-password", required: true, minlength: "10" });
  const again = h("input", { id: "new-password-again", type: "password", autocomplete: "new-password", required: true });
  const out = h("div", { "aria-live": "polite" });
  show(h("div", { class: "panel narrow" }, h("h1", {}, "Set your password"), out,
    h("p", { class: "muted" }, "At least 10 characters. This link works once."),
    h("form", { class: "stack", onsubmit: async e => {
      e.preventDefault();
      if (password.value !== again.value) { out.replaceChildren(message("The two passwords differ")); return; }
      try { const r = await api("/invitations/accept", { method: "POST", json: { token, password: password.value } });
        history.replaceState(null, "", "#/sign-in"); signInPage(`Password set for ${r.email}. Sign in.`); }
      catch (err) { out.replaceChildren(message(err.message)); }
    } }, h("label", { for: "new-password" }, "Password", password), h("label", { for: "new-password-again" }, "Again", again),
      h("button", { class: "b", type: "submit" }, "Set password"))));
}

async function homePage(params) {
  const [a, ledger, alerts] = await Promise.all([api("/account"), api("/ledger?limit=25" + (params.get("before") ? "&before=" + encodeURIComponent(params.get("before")) : "")), api("/balance-alerts")]);
  const below = alerts.data.filter(x => x.below);
  const code = h("input", { id: "redeem-code", required: true, autocomplete: "off", placeholder: "XXXX-XXXX-XXXX-XXXX-XXXX-XXXX-XXXX" });
  const out = h("div", { "aria-live": "polite" });
  show(h("h1", {}, a.name),
    below.length ? h("div", { class: "msg err", role: "alert", "data-below": "" }, `Your balance is below your alert at ${below.map(x => x.threshold).join(", ")}. `, h("a", { href: "#/topups" }, "Top up")) : null,
    h("div", { class: "cards" }, card("Balance", a.balance, "balance"), card("Available to spend", a.available, "available"),
      card("Held by running tasks", a.held), card("Reserved by the gateways", a.leased)),
    h("p", { class: "muted" }, "Your balance is what you have paid in less what has been charged. Video tasks hold part of it until they finish; each running gateway reserves a little to answer requests quickly and gives back what it does not use."),
    h("h2", {}, "Redeem a code"),
    h("form", { class: "row", onsubmit: async e => {
      e.preventDefault();
      try { const r = await api("/redemptions", { method: "POST", json: { code: code.value } }); await homePage(params);
        main.querySelector("#redeem-out").replaceChildren(message(`Redeemed: ${r.amount} added; your balance is ${r.balance}.`, true)); }
      catch (err) { out.replaceChildren(message(err.message)); }
    } }, h("label", { for: "redeem-code" }, "Code", code), h("button", { class: "b", type: "submit" }, "Redeem")),
    h("div", { id: "redeem-out" }, out),
    h("h2", {}, "Ledger"),
    table([{ label: "Time", get: r => when(r.created_at) }, { label: "What", get: r => KIND[r.kind] || r.kind },
           { label: "Amount", num: 1, get: r => r.amount }, { label: "Balance after", num: 1, get: r => r.balance_after },
           { label: "Model", get: r => r.model || "" }, { label: "Note", wrap: 1, get: r => r.note || "" }], ledger.data),
    ledger.next_cursor ? h("p", {}, h("a", { href: "#/home?before=" + encodeURIComponent(ledger.next_cursor) }, "Older rows →")) : null);
}

async function keysPage() {
  const keys = await api("/keys");
  const name = h("input", { id: "key-name", required: true, placeholder: "my app" });
  const rpm = h("input", { id: "key-rpm", inputmode: "numeric", placeholder: "none" });
  const daily = h("input", { id: "key-daily", inputmode: "decimal", placeholder: "none" });
  const models = h("input", { id: "key-models", placeholder: "all the account may call" });
  const out = h("div", { "aria-live": "polite" });
  const reload = async note => { await keysPage(); if (note) main.querySelector("#keys-out").replaceChildren(...[].concat(note)); };
  show(h("h1", {}, "Keys"),
    h("p", { class: "muted" }, "A key calls the API for this account. Its limits narrow the account's own; they never widen them."),
    table([{ label: "Name", get: k => k.name }, { label: "Starts with", get: k => h("span", { class: "mono" }, k.prefix + "…") },
           { label: "State", get: k => k.revoked ? "revoked" : k.disabled ? "disabled" : "active" }, { label: "Created", get: k => when(k.created_at) },
           { label: "", get: k => k.revoked ? "" : h("button", { class: "s", type: "button", "data-revoke": k.id, onclick: async () => {
             if (!confirm(`Revoke ${k.name}? Anything using it stops working.`)) return;
             try { await api(`/keys/${encodeURIComponent(k.id)}/revoke`, { method: "POST" }); await reload(message(`Revoked ${k.name}.`, true)); }
             catch (err) { out.replaceChildren(message(err.message)); } } }, "Revoke") }], keys.data),
    h("div", { id: "keys-out" }, out),
    h("h2", {}, "New key"),
    h("form", { class: "row", onsubmit: async e => {
      e.preventDefault();
      const limits = {};
      if (rpm.value.trim()) limits.rpm = Number(rpm.value);
      if (daily.value.trim()) limits.daily_budget = daily.value.trim();
      if (models.value.trim()) limits.models = models.value.split(",").map(m => m.trim()).filter(Boolean);
      try { const k = await api("/keys", { method: "POST", json: { name: name.value, limits } });
        await reload([message(`Your new key ${k.name}. Copy it now: it is shown only once.`, true), h("p", { class: "secret", "data-secret": "" }, k.secret)]); }
      catch (err) { out.replaceChildren(message(err.message)); }
    } }, h("label", { for: "key-name" }, "Name", name), h("label", { for: "key-rpm" }, "Requests a minute", rpm),
      h("label", { for: "key-daily" }, "Spend a day", daily), h("label", { for: "key-models" }, "Models (comma-separated)", models),
      h("button", { class: "b", type: "submit" }, "Create")));
}

async function alertsPage() {
  const alerts = await api("/balance-alerts");
  const threshold = h("input", { id: "alert-threshold", required: true, inputmode: "decimal", placeholder: "10" });
  const url = h("input", { id: "alert-url", type: "url", placeholder: "https://… (optional)" });
  const slack = h("input", { id: "alert-slack", type: "checkbox" });
  const out = h("div", { "aria-live": "polite" });
  const reload = async note => { await alertsPage(); if (note) main.querySelector("#alerts-out").replaceChildren(...[].concat(note)); };
  show(h("h1", {}, "Balance alerts"),
    h("p", { class: "muted" }, `When your balance (now ${alerts.balance}) falls below an alert's amount, these pages say so, and if you gave a webhook the gateway posts a signed event to it — and another when the balance is back. At most ${alerts.most}.`),
    table([{ label: "Below", num: 1, get: x => x.threshold }, { label: "Webhook", wrap: 1, get: x => x.webhook_url || "none: these pages only" },
           { label: "Format", get: x => x.webhook_url ? x.format : "" }, { label: "Now", get: x => x.below ? "below" : "above" },
           { label: "Set by", get: x => x.created_by.replace(/^portal:/, "") },
           { label: "", get: x => h("button", { class: "s", type: "button", "data-delete": x.id, onclick: async () => {
             try { await api(`/balance-alerts/${encodeURIComponent(x.id)}`, { method: "DELETE" }); await reload(message("Deleted.", true)); }
             catch (err) { out.replaceChildren(message(err.message)); } } }, "Delete") }], alerts.data),
    h("div", { id: "alerts-out" }, out),
    h("h2", {}, "New alert"),
    h("form", { class: "row", onsubmit: async e => {
      e.preventDefault();
      const json = { threshold: threshold.value.trim() };
      if (url.value.trim()) { json.webhook_url = url.value.trim(); json.format = slack.checked ? "slack" : "standard"; }
      try { const x = await api("/balance-alerts", { method: "POST", json });
        await reload(x.signing_secret ? [message("Alert added. Its events are signed the Standard Webhooks way with this secret; copy it now: it is shown only once.", true), h("p", { class: "secret", "data-secret": "" }, x.signing_secret)] : message("Alert added.", true)); }
      catch (err) { out.replaceChildren(message(err.message)); }
    } }, h("label", { for: "alert-threshold" }, "Below", threshold), h("label", { for: "alert-url" }, "Webhook", url),
      h("label", { for: "alert-slack" }, "Slack format", slack), h("button", { class: "b", type: "submit" }, "Add")));
}

async function usagePage(params) {
  const page = await api("/usage?limit=50" + (params.get("before") ? "&before=" + encodeURIComponent(params.get("before")) : ""));
  show(h("h1", {}, "Usage"),
    table([{ label: "Time", get: r => when(r.created_at) }, { label: "Model", get: r => r.model || "" }, { label: "Endpoint", get: r => r.endpoint || "" },
           { label: "Status", num: 1, get: r => r.status }, { label: "Quantity", get: r => r.quantity || "" }, { label: "Charged", num: 1, get: r => r.charge || "0" },
           { label: "", get: r => r.request_id && r.charge && r.charge !== "0" ? h("a", { href: "#/charges/" + encodeURIComponent(r.request_id) }, "Why this charge") : "" }], page.data),
    page.next_cursor ? h("p", {}, h("a", { href: "#/usage?before=" + encodeURIComponent(page.next_cursor) }, "Older →")) : null);
}

async function chargesPage(id) {
  const c = await api("/charges/" + encodeURIComponent(id));
  show(h("p", {}, h("a", { href: "#/usage" }, "← Usage")), h("h1", {}, "Request ", h("span", { class: "mono" }, id)),
    h("div", { class: "cards" }, card("Charged", c.charged)),
    c.data.map(x => h("div", { class: "panel" },
      h("p", {}, `${x.model}: ${x.units || ""} measured by ${x.measured || "—"}, at price version ${x.price_version ?? "—"}`),
      h("p", { class: "muted" }, `exact ${x.exact}, rounded ${x.rounding || ""} to ${x.priced}; held ${x.hold}, bound ${x.bound} (${x.bound_basis || ""}); charged ${x.charged}`),
      x.anomaly ? h("p", {}, "Note: ", x.anomaly) : null)));
}

function statementsPage() {
  const from = h("input", { id: "statement-from", type: "date" });
  const until = h("input", { id: "statement-until", type: "date" });
  const link = h("a", { id: "statement-link", class: "b", href: API + "/statement", download: "statement.json" }, "Download the statement");
  const update = () => {
    const q = new URLSearchParams();
    if (from.value) q.set("from", String(Date.parse(from.value + "T00:00:00Z")));
    if (until.value) q.set("until", String(Date.parse(until.value + "T00:00:00Z") + 86400000));
    link.setAttribute("href", API + "/statement" + (q.toString() ? "?" + q : ""));
  };
  from.addEventListener("change", update); until.addEventListener("change", update);
  show(h("h1", {}, "Statements"),
    h("p", {}, "A statement lists every change of your balance over a period, each row chained to the one before and to a checkpoint the operator signs. You can check it yourself, without trusting this site."),
    h("div", { class: "row" }, h("label", { for: "statement-from" }, "From (UTC day)", from), h("label", { for: "statement-until" }, "Until (UTC day, included)", until)),
    h("p", {}, link),
    h("h2", {}, "Checking it"),
    h("ol", {},
      h("li", {}, "Fetch the operator's public keys: ", h("a", { href: "/.well-known/tollgate-ledger-keys" }, "/.well-known/tollgate-ledger-keys"), "."),
      h("li", {}, "Run ", h("code", {}, "tollgate verify statement.json --key HEX"), " or the standalone ", h("code", {}, "python3 verify_statement.py statement.json --key HEX"), " (docs/verify_statement.py in tollgate's repository)."),
      h("li", {}, "It checks every row's hash and balance, and the checkpoint's signature.")));
}

async function securityPage(session) {
  const out = h("div", { "aria-live": "polite" });
  if (session.person.totp) {
    show(h("h1", {}, "Security"), h("p", {}, "Two-step sign-in (TOTP) is on."), out);
    return;
  }
  show(h("h1", {}, "Security"), out,
    h("p", {}, "Two-step sign-in asks for a code from an authenticator app after your password."),
    h("button", { class: "b", type: "button", onclick: async () => {
      try {
        const t = await api("/totp", { method: "POST" });
        const code = h("input", { id: "totp-code", inputmode: "numeric", autocomplete: "one-time-code", required: true });
        show(h("h1", {}, "Security"), out,
          h("p", {}, "Add this key to your authenticator app (or open the link on your phone), then enter the code it shows."),
          h("p", { class: "secret", id: "totp-secret" }, t.secret), h("p", {}, h("a", { href: t.otpauth_uri }, "Open in an authenticator app")),
          h("form", { class: "row", onsubmit: async e => {
            e.preventDefault();
            try { const r = await api("/totp/confirm", { method: "POST", json: { code: code.value } });
              show(h("h1", {}, "Security"), message("Two-step sign-in is on. Keep these recovery codes somewhere safe: each signs you in once without your phone. They are shown only now.", true),
                h("pre", { class: "secret", id: "recovery-codes" }, r.recovery_codes.join("\n"))); }
            catch (err) { out.replaceChildren(message(err.message)); }
          } }, h("label", { for: "totp-code" }, "Code", code), h("button", { class: "b", type: "submit" }, "Turn on")));
      } catch (err) { out.replaceChildren(message(err.message)); }
    } }, "Set up two-step sign-in"));
}

// --- top-ups (docs/operations.md, "Payments"): paid on the provider's page; the balance rises
// when the provider confirms, by its signed webhook, not when the browser comes back.
const PAYMENT_STATE = { open: "waiting for payment", paid: "paid", unpaid: "not paid", failed: "failed" };
function paymentState(p) {
  let s = PAYMENT_STATE[p.status] || p.status;
  if (p.refunded_minor > 0) s += p.refunded_minor >= p.amount_minor ? ", refunded" : ", partly refunded";
  if (p.dispute) s += ", chargeback " + p.dispute;
  return s;
}
function major(minor, terms) {
  // The provider's minor units (cents) in the currency (dollars), exactly: by digits, not floats.
  const places = terms.places || 0, digits = String(Math.abs(minor)).padStart(places + 1, "0");
  return (minor < 0 ? "-" : "") + (places ? digits.slice(0, -places) + "." + digits.slice(-places) : digits);
}
async function topupsPage(params) {
  const [terms, payments, auto] = await Promise.all([api("/topups/terms"), api("/payments?limit=25"), api("/auto-topup")]);
  if (!terms.offered) return show(h("h1", {}, "Top up"), h("p", {}, "Top-ups are not offered here. Ask your operator for a redemption code."));
  const cur = terms.currency.toUpperCase();
  const out = h("div", { "aria-live": "polite" });
  const paid = params.get("paid");
  if (paid) {
    // Back from the provider's page: the payment's state, until its confirmation arrives.
    const p = await api("/payments/" + encodeURIComponent(paid)).catch(() => null);
    if (p && p.status === "open") setTimeout(() => { if (location.hash.includes(paid)) topupsPage(params).catch(() => {}); }, 1500);
    if (p) out.replaceChildren(message(p.status === "paid" ? `Paid: ${p.amount} added to your balance.` : p.status === "open" ? "Thank you. Your balance rises as soon as the payment provider confirms the payment." : `This payment is ${paymentState(p)}.`, p.status !== "failed"));
  } else if (params.get("cancelled")) out.replaceChildren(message("The payment was cancelled; nothing was charged."));
  const amount = h("input", { id: "topup-amount", required: true, inputmode: "decimal", placeholder: terms.min_amount });
  const save = h("input", { id: "topup-save", type: "checkbox" });
  const a = auto.auto_topup;
  const threshold = h("input", { id: "auto-threshold", inputmode: "decimal", value: a ? a.threshold : "" });
  const autoAmount = h("input", { id: "auto-amount", inputmode: "decimal", value: a ? major(a.amount_minor, terms) : "" });
  const cap = h("input", { id: "auto-cap", inputmode: "decimal", value: a ? major(a.daily_cap_minor, terms) : "" });
  const enabled = h("input", { id: "auto-enabled", type: "checkbox" });
  enabled.checked = a ? a.enabled : true;
  const autoOut = h("div", { "aria-live": "polite" });
  show(h("h1", {}, "Top up"), out,
    h("p", { class: "muted" }, `Pay in ${cur}, from ${terms.min_amount} to ${terms.max_amount}; each ${cur} 1 adds ${terms.units_per_currency_unit} to your balance. You pay on the payment provider's page; your balance rises when it confirms.`),
    h("form", { class: "row", onsubmit: async e => {
      e.preventDefault();
      try {
        const p = await api("/topups", { method: "POST", json: { amount: amount.value.trim(), save_card: save.checked } });
        location.assign(p.checkout_url);
      } catch (err) { out.replaceChildren(message(err.message)); }
    } }, h("label", { for: "topup-amount" }, `Amount (${cur})`, amount),
         Number(terms.max_automatic_per_day) > 0 ? h("label", { for: "topup-save", class: "check" }, h("span", {}, save, " Keep the card for automatic top-ups")) : null,
         h("button", { class: "b", type: "submit" }, "Pay")),
    Number(terms.max_automatic_per_day) > 0 ? [
      h("h2", {}, "Automatic top-up"),
      h("p", { class: "muted" }, terms.card_saved ? `When what you can spend falls below the threshold, your saved card is charged the amount, at most the daily cap (up to ${terms.max_automatic_per_day} ${cur}) a day.` : "Top up once with “Keep the card” ticked to turn this on."),
      a && a.paused ? message("Paused: " + a.paused + " Save the settings again to resume.") : null,
      h("form", { class: "row", onsubmit: async e => {
        e.preventDefault();
        try { await api("/auto-topup", { method: "PUT", json: { enabled: enabled.checked, threshold: threshold.value.trim(), amount: autoAmount.value.trim(), daily_cap: cap.value.trim() } });
          autoOut.replaceChildren(message("Saved.", true)); }
        catch (err) { autoOut.replaceChildren(message(err.message)); }
      } }, h("label", { for: "auto-threshold" }, "Below (balance)", threshold), h("label", { for: "auto-amount" }, `Charge (${cur})`, autoAmount),
           h("label", { for: "auto-cap" }, `At most a day (${cur})`, cap), h("label", { for: "auto-enabled" }, h("span", {}, enabled, " On")),
           h("button", { class: "b", type: "submit" }, "Save")), autoOut] : null,
    h("h2", {}, "Payments"),
    table([{ label: "Time", get: p => when(p.created_at) }, { label: `Paid (${cur})`, num: 1, get: p => major(p.amount_minor, terms) },
           { label: "Added", num: 1, get: p => p.amount }, { label: "How", get: p => p.automatic ? "automatic" : "by you" },
           { label: "State", get: paymentState }, { label: "Id", get: p => h("span", { class: "mono" }, p.id) }], payments.data));
}

async function route() {
  const [path, query] = (location.hash.slice(1) || "/home").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "invite" && parts[1]) return invitePage(parts[1]);
  let session;
  try { session = await api("/session"); }
  catch (err) { return signInPage(); }
  csrf = session.csrf_token;
  document.getElementById("top").hidden = false;
  document.getElementById("who").textContent = session.person.email;
  for (const a of document.querySelectorAll("header nav a")) a.setAttribute("aria-current", a.getAttribute("href").slice(2) === (parts[0] || "home") ? "page" : "false");
  try {
    const params = new URLSearchParams(query || "");
    if (parts[0] === "security") await securityPage(session);
    else if (parts[0] === "keys") await keysPage();
    else if (parts[0] === "usage") await usagePage(params);
    else if (parts[0] === "charges" && parts[1]) await chargesPage(parts[1]);
    else if (parts[0] === "statements") statementsPage();
    else if (parts[0] === "topups") await topupsPage(params);
    else if (parts[0] === "alerts") await alertsPage();
    else await homePage(params);
  } catch (err) {
    if (err.status === 401) signInPage(); else show(message(err.message));
  }
}
document.getElementById("signout").addEventListener("click", async () => {
  try { await api("/session", { method: "DELETE" }); } catch (_) { /* signed out either way */ }
  csrf = ""; history.replaceState(null, "", "#/sign-in"); signInPage("Signed out.");
});
window.addEventListener("hashchange", route);
route();
