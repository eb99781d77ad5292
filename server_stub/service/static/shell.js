// The dashboard's entry module: the login gate, then the dashboard.
// The token typed into the form is sent once to POST /api/v1/auth/login and never stored:
// no localStorage, no sessionStorage, no cookie written from script. The server answers with an
// HttpOnly session cookie that later requests carry by themselves; a passkey login ends the same
// way.
import { $, call, say } from "./api.js";
import { loadDashboard } from "./dashboard.js";
import { passkeyProblem, registerPasskey, showPasskeys, signInWithPasskey } from "./passkeys.js";

function show(section) {
  $("login").hidden = section !== "login";
  $("dashboard").hidden = section !== "dashboard";
}

function showLogin() {
  show("login");
  $("logout").hidden = true;
  $("status-line").textContent = "Sign in to continue.";
  const problem = passkeyProblem();
  $("passkey-login").hidden = problem !== null;
  say("passkey-login-unavailable", problem);
  $("token").focus();
}

async function refresh() {
  const status = await call("GET", "/api/v1/auth/status");
  if (!status.ok) {
    $("status-line").textContent = status.error;
    return;
  }
  const { auth_required: authRequired, authenticated } = status.data;
  if (authRequired && !authenticated) {
    showLogin();
    return;
  }
  show("dashboard");
  $("logout").hidden = !authRequired;
  $("passkeys").hidden = !authRequired;
  $("status-line").textContent = authRequired ? "Signed in." : "Auth is off (no token set).";
  await Promise.all([loadDashboard(), authRequired ? showPasskeys() : null]);
}

async function tokenLogin(event) {
  event.preventDefault();
  const field = $("token");
  say("login-error", "");
  const result = await call("POST", "/api/v1/auth/login", { token: field.value });
  field.value = "";
  if (!result.ok) {
    say("login-error", result.error);
    return;
  }
  await refresh();
}

async function passkeyLogin() {
  say("login-error", "");
  const problem = await signInWithPasskey();
  if (problem) {
    say("login-error", problem);
    return;
  }
  await refresh();
}

async function logout() {
  await call("POST", "/api/v1/auth/logout");
  await refresh();
}

// A module script runs once the document is parsed, so the elements exist.
$("login-form").addEventListener("submit", tokenLogin);
$("passkey-login").addEventListener("click", passkeyLogin);
$("passkey-register").addEventListener("submit", registerPasskey);
$("logout").addEventListener("click", logout);
if (document.body.dataset.authRequired === "true") {
  showLogin();
}
refresh();
