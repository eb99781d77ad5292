// Passkeys: sign in with one, register one (needs a session), list and delete them.
// The server's options arrive as JSON with binary values in unpadded base64url; the browser's
// answers go back the same way (the PublicKeyCredential JSON py_webauthn parses).

import { $, call, say, when } from "./api.js";

const PREFIX = "/api/v1/auth/passkey";

// Why passkeys cannot work on this page, or null when they can.
export function passkeyProblem() {
  if (!window.isSecureContext || !window.PublicKeyCredential || !navigator.credentials) {
    return "Passkeys are off in this browser context: they need https or http://localhost. " +
      "On plain http with another address the browser disables them, so sign in with the token.";
  }
  const host = location.hostname;
  if (/^[0-9.]+$/.test(host) || host.includes(":")) {
    return "Passkeys need a host name, not an IP address: open this page at " +
      "http://localhost:PORT or under its DNS name, or sign in with the token.";
  }
  return null;
}

function toBytes(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

function toText(buffer) {
  const binary = String.fromCharCode(...new Uint8Array(buffer));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const descriptors = (list) => (list || []).map((item) => ({ ...item, id: toBytes(item.id) }));

function credentialJson(credential, response) {
  return {
    id: credential.id,
    rawId: toText(credential.rawId),
    type: credential.type,
    response,
    authenticatorAttachment: credential.authenticatorAttachment,
    clientExtensionResults: credential.getClientExtensionResults(),
  };
}

function ceremonyProblem(error) {
  return error.name === "NotAllowedError"
    ? "No passkey was used: the prompt was cancelled or timed out, or none is registered here."
    : `The browser refused the passkey (${error.name}: ${error.message}).`;
}

// Returns null when signed in, else a message for the user.
export async function signInWithPasskey() {
  const options = await call("POST", `${PREFIX}/login/options`);
  if (!options.ok) {
    return options.error;
  }
  let credential;
  try {
    credential = await navigator.credentials.get({
      publicKey: {
        ...options.data,
        challenge: toBytes(options.data.challenge),
        allowCredentials: descriptors(options.data.allowCredentials),
      },
    });
  } catch (error) {
    return ceremonyProblem(error);
  }
  const assertion = credential.response;
  const result = await call("POST", `${PREFIX}/login`, {
    credential: credentialJson(credential, {
      clientDataJSON: toText(assertion.clientDataJSON),
      authenticatorData: toText(assertion.authenticatorData),
      signature: toText(assertion.signature),
      userHandle: assertion.userHandle ? toText(assertion.userHandle) : null,
    }),
  });
  return result.ok ? null : result.error;
}

export async function registerPasskey(event) {
  event.preventDefault();
  say("passkey-message", "");
  const options = await call("POST", `${PREFIX}/register/options`);
  if (!options.ok) {
    say("passkey-message", options.error);
    return;
  }
  let credential;
  try {
    credential = await navigator.credentials.create({
      publicKey: {
        ...options.data,
        challenge: toBytes(options.data.challenge),
        user: { ...options.data.user, id: toBytes(options.data.user.id) },
        excludeCredentials: descriptors(options.data.excludeCredentials),
      },
    });
  } catch (error) {
    say("passkey-message", ceremonyProblem(error));
    return;
  }
  const attestation = credential.response;
  const result = await call("POST", `${PREFIX}/register`, {
    label: $("passkey-label").value,
    credential: credentialJson(credential, {
      clientDataJSON: toText(attestation.clientDataJSON),
      attestationObject: toText(attestation.attestationObject),
      transports: attestation.getTransports ? attestation.getTransports() : [],
    }),
  });
  if (!result.ok) {
    say("passkey-message", result.error);
    return;
  }
  $("passkey-label").value = "";
  say("passkey-message", `Passkey "${result.data.label}" registered.`);
  await showPasskeys();
}

function cell(row, text) {
  const td = row.insertCell();
  td.textContent = text;
  return td;
}

// Deleting takes two clicks: the first arms the button, the second deletes.
function deleteButton(passkey) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Delete";
  button.addEventListener("click", async () => {
    if (button.dataset.armed !== "true") {
      button.dataset.armed = "true";
      button.textContent = "Really delete?";
      return;
    }
    const path = `${PREFIX}/credentials/${encodeURIComponent(passkey.id)}`;
    const result = await call("DELETE", path);
    say("passkey-message", result.ok ? `Passkey "${passkey.label}" deleted.` : result.error);
    await showPasskeys();
  });
  return button;
}

export async function showPasskeys() {
  const problem = passkeyProblem();
  $("passkey-register").hidden = problem !== null;
  say("passkey-register-unavailable", problem);
  const table = $("passkey-list");
  table.replaceChildren();
  const result = await call("GET", `${PREFIX}/credentials`);
  if (!result.ok) {
    table.createCaption().textContent = result.error;
    return;
  }
  if (result.data.length === 0) {
    table.createCaption().textContent = "No passkey registered yet.";
    return;
  }
  const head = table.createTHead().insertRow();
  for (const title of ["Name", "For", "Created", "Last used", ""]) {
    head.appendChild(document.createElement("th")).textContent = title;
  }
  const body = table.createTBody();
  for (const passkey of result.data) {
    const row = body.insertRow();
    cell(row, passkey.label);
    cell(row, passkey.rp_id);
    cell(row, when(passkey.created_at)).className = "time";
    cell(row, passkey.last_used_at ? when(passkey.last_used_at) : "never").className = "time";
    cell(row, "").appendChild(deleteButton(passkey));
  }
}
