// The public shell. The token typed into the form is sent once to POST /api/v1/auth/login and
// never stored: no localStorage, no sessionStorage, no cookie written from script. The server
// answers with an HttpOnly session cookie that later requests carry by themselves.
"use strict";

const $ = (id) => document.getElementById(id);

async function getJson(path) {
  const response = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  return { status: response.status, body: await response.json().catch(() => null) };
}

function show(section) {
  $("login").hidden = section !== "login";
  $("dashboard").hidden = section !== "dashboard";
}

async function showDashboard(authRequired) {
  show("dashboard");
  $("logout").hidden = !authRequired;
  const { status, body } = await getJson("/api/v1/system");
  if (status === 200 && body && body.ok) {
    $("status-line").textContent = `Mode: ${body.data.mode}`;
    $("system").textContent = JSON.stringify(body.data, null, 2);
  } else {
    $("status-line").textContent = body && body.error ? body.error.message : `HTTP ${status}`;
  }
}

async function refresh() {
  const { status, body } = await getJson("/api/v1/auth/status");
  if (status !== 200 || !body || !body.ok) {
    $("status-line").textContent = body && body.error ? body.error.message : `HTTP ${status}`;
    return;
  }
  if (body.data.auth_required && !body.data.authenticated) {
    $("status-line").textContent = "Sign in to continue.";
    show("login");
    $("token").focus();
    return;
  }
  await showDashboard(body.data.auth_required);
}

async function login(event) {
  event.preventDefault();
  const field = $("token");
  const error = $("login-error");
  error.hidden = true;
  const response = await fetch("/api/v1/auth/login", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ token: field.value }),
  });
  field.value = "";
  if (response.ok) {
    await refresh();
    return;
  }
  const body = await response.json().catch(() => null);
  error.textContent = body && body.error ? body.error.message : `HTTP ${response.status}`;
  error.hidden = false;
}

async function logout() {
  await fetch("/api/v1/auth/logout", { method: "POST", credentials: "same-origin" });
  await refresh();
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", login);
  $("logout").addEventListener("click", logout);
  if (document.body.dataset.authRequired === "true") {
    show("login");
  }
  refresh();
});
