import Crypto
import Foundation

/// The one page `GET /` serves: register a user name, sign in (modal, and conditional through the user name
/// field's autofill), and see the registered passkeys. Self-contained: no external scripts, styles or fonts;
/// the Content-Security-Policy allows exactly its inline script and style by their SHA-256.
///
/// Driven without clicks by its query (`Docs/RelyingParty.md`): `?auto=register&user=alice&hints=hybrid`,
/// `?auto=sign-in`, `?auto=sign-in&user=alice`; also `display`, `uv`, `rk` and `attestation`. The outcome goes
/// to `<pre id="verdict">` (with `data-result="pass"` or `"fail"`) and to `document.title`, as
/// `PASS register alice`, `FAIL register: InvalidStateError …`, `PASS sign-in alice`.
enum WebPage {
    static let style = """

        :root { color-scheme: light dark; --fg: #15171a; --muted: #5b6270; --bg: #fff; --panel: #f4f5f7; --line: #d9dce1;
          --accent: #1a5fd0; --pass: #e3f6e3; --fail: #fbe4e4; --danger: #b3261e; }
        @media (prefers-color-scheme: dark) { :root { --fg: #e8eaed; --muted: #9aa0aa; --bg: #16181c; --panel: #22252b;
          --line: #3a3f47; --accent: #8ab4f8; --pass: #1e3a24; --fail: #4a2323; --danger: #f28b82; } }
        * { box-sizing: border-box; }
        body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 64rem; padding: 1rem; color: var(--fg);
          background: var(--bg); }
        h1 { font-size: 1.5rem; margin: .5rem 0; } h2 { font-size: 1.1rem; margin: 1.75rem 0 .5rem; }
        h3 { font-size: 1rem; margin: 1rem 0 .25rem; }
        #rp { color: var(--muted); margin-top: 0; overflow-wrap: anywhere; }
        form { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .5rem 1rem; align-items: center; }
        fieldset { grid-column: 1 / -1; display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .5rem 1rem;
          border: 1px solid var(--line); border-radius: .5rem; }
        .buttons { grid-column: 1 / -1; display: flex; flex-wrap: wrap; gap: .5rem; }
        button { font: inherit; padding: .45rem 1.1rem; border-radius: .4rem; border: 1px solid var(--line);
          background: var(--panel); color: var(--fg); cursor: pointer; }
        button.primary { background: var(--accent); border-color: var(--accent); color: var(--bg); }
        button.delete { color: var(--danger); padding: .2rem .6rem; }
        input, select { font: inherit; width: 100%; min-width: 0; padding: .35rem .5rem; border: 1px solid var(--line);
          border-radius: .4rem; background: var(--bg); color: var(--fg); }
        pre { background: var(--panel); padding: .6rem; border-radius: .4rem; white-space: pre-wrap;
          overflow-wrap: anywhere; margin: 0; font-size: .875rem; }
        #verdict[data-result="pass"] { background: var(--pass); }
        #verdict[data-result="fail"] { background: var(--fail); }
        details { margin-top: .75rem; } summary { cursor: pointer; font-weight: 600; }
        .flags { display: flex; flex-wrap: wrap; gap: .35rem; margin: .25rem 0 .5rem; padding: 0; list-style: none; }
        .flags li { border: 1px solid var(--line); border-radius: 1rem; padding: 0 .6rem; font-size: .85rem; }
        .flags li.on { background: var(--accent); border-color: var(--accent); color: var(--bg); }
        #signal-log { font-size: .875rem; padding-left: 1.5rem; overflow-wrap: anywhere; }
        #signal-log li[data-outcome="sent"] { color: var(--fg); }
        #upgrade[data-result="pass"] { background: var(--pass); }
        #upgrade[data-result="fail"] { background: var(--fail); }
        #signed-in { color: var(--muted); }
        #steps { font-size: .875rem; color: var(--muted); padding-left: 1.5rem; overflow-wrap: anywhere; }
        table { border-collapse: collapse; width: 100%; }
        th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left; vertical-align: top; }
        td.id { font-family: ui-monospace, monospace; font-size: .85rem; overflow-wrap: anywhere; }
        @media (max-width: 40rem) {
          body { padding: .75rem; }
          form, fieldset { grid-template-columns: minmax(0, 1fr); gap: .25rem; }
          label { margin-top: .35rem; }
          .buttons button { flex: 1; }
          #credentials thead { display: none; }
          #credentials tr { display: block; border: 1px solid var(--line); border-radius: .5rem; padding: .4rem;
            margin-bottom: .6rem; }
          #credentials td { display: grid; grid-template-columns: 7.5rem minmax(0, 1fr); border: 0; padding: .15rem 0; }
          #credentials td::before { content: attr(data-label); color: var(--muted); }
        }

        """

    static let script = #"""

        "use strict";
        const $ = (id) => document.getElementById(id);
        let conditional = null; // {controller, settled}: the pending conditional-mediation request
        let rpID = location.hostname; // the RP ID, from GET /credentials

        // base64url without padding, both ways, for browsers without the JSON helpers.
        function toBuffer(text) {
          const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
          return Uint8Array.from(binary, (c) => c.charCodeAt(0)).buffer;
        }
        function toBase64URL(data) {
          const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
          let binary = "";
          for (const byte of bytes) binary += String.fromCharCode(byte);
          return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
        }
        function jsonSafe(value) {
          if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return toBase64URL(value);
          if (Array.isArray(value)) return value.map(jsonSafe);
          if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]));
          return value;
        }
        function creationOptions(json) {
          if (typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function") {
            step("options parsed by PublicKeyCredential.parseCreationOptionsFromJSON");
            return PublicKeyCredential.parseCreationOptionsFromJSON(json);
          }
          step("options parsed by the page's own decoder (no parseCreationOptionsFromJSON here)");
          return { ...json, challenge: toBuffer(json.challenge), user: { ...json.user, id: toBuffer(json.user.id) },
            excludeCredentials: (json.excludeCredentials || []).map((c) => ({ ...c, id: toBuffer(c.id) })) };
        }
        function requestOptions(json) {
          if (typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function") {
            step("options parsed by PublicKeyCredential.parseRequestOptionsFromJSON");
            return PublicKeyCredential.parseRequestOptionsFromJSON(json);
          }
          step("options parsed by the page's own decoder (no parseRequestOptionsFromJSON here)");
          return { ...json, challenge: toBuffer(json.challenge),
            allowCredentials: (json.allowCredentials || []).map((c) => ({ ...c, id: toBuffer(c.id) })) };
        }
        function credentialJSON(credential) {
          if (typeof credential.toJSON === "function") {
            step("response encoded by credential.toJSON()");
            return credential.toJSON();
          }
          step("response encoded by the page's own encoder (no toJSON here)");
          const r = credential.response;
          const json = { id: credential.id, rawId: toBase64URL(credential.rawId), type: credential.type,
            authenticatorAttachment: credential.authenticatorAttachment || null,
            clientExtensionResults: jsonSafe(credential.getClientExtensionResults()),
            response: { clientDataJSON: toBase64URL(r.clientDataJSON) } };
          if (r.attestationObject) {
            json.response.attestationObject = toBase64URL(r.attestationObject);
            json.response.transports = typeof r.getTransports === "function" ? r.getTransports() : [];
          } else {
            json.response.authenticatorData = toBase64URL(r.authenticatorData);
            json.response.signature = toBase64URL(r.signature);
            json.response.userHandle = r.userHandle ? toBase64URL(r.userHandle) : null;
          }
          return json;
        }

        class RPError extends Error {
          constructor(code, message) { super(message); this.name = code; }
        }
        async function post(path, body) {
          const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
          const json = await response.json().catch(() => ({ error: "badAnswer", message: `HTTP ${response.status}` }));
          if (!response.ok) {
            const error = new RPError(json.error || `HTTP ${response.status}`, json.message || "");
            error.body = json;
            throw error;
          }
          return json;
        }

        function step(text) {
          const item = document.createElement("li");
          item.textContent = `${new Date().toISOString().slice(11, 23)} ${text}`;
          $("steps").append(item);
        }
        function finish(pass, title, details) {
          document.title = `${pass ? "PASS" : "FAIL"} ${title}`;
          $("verdict").dataset.result = pass ? "pass" : "fail";
          $("verdict").textContent = `${document.title}\n${details}`;
          step(document.title);
        }
        function started(title) {
          document.title = `... ${title}`;
          $("verdict").dataset.result = "running";
          $("verdict").textContent = `${title}: running`;
          step(`${title}: started`);
        }
        function describe(verdict) {
          return Object.entries(verdict).filter(([k, v]) => k !== "decoded" && (v === null || typeof v !== "object" || Array.isArray(v)))
            .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : v}`).join("\n");
        }
        // The Signal API (WebAuthn L3 §5.1.10–5.1.12): each call goes to the log with its argument and its outcome,
        // "sent" (the promise resolved), "not supported by this browser" (no such method) or the error's name.
        let signalCount = 0;
        async function sendSignal(method, argument) {
          signalCount += 1;
          const item = document.createElement("li");
          item.id = `signal-${signalCount}`;
          item.className = "signal";
          item.dataset.method = method;
          item.dataset.argument = JSON.stringify(argument);
          let outcome;
          if (!window.PublicKeyCredential || typeof PublicKeyCredential[method] !== "function") {
            outcome = "not supported by this browser";
          } else {
            try {
              const timeout = new Promise((_, reject) => setTimeout(() => reject(new DOMException("no answer within 10 s", "TimeoutError")), 10000));
              await Promise.race([PublicKeyCredential[method](argument), timeout]);
              outcome = "sent";
            } catch (error) {
              outcome = (error && error.name) || "Error";
              item.dataset.message = String((error && error.message) || "");
            }
          }
          item.dataset.outcome = outcome;
          item.textContent = `${method}(${JSON.stringify(argument)}): ${outcome}${item.dataset.message ? ` (${item.dataset.message})` : ""}`;
          $("signal-log").append(item);
          $("no-signals").hidden = true;
          step(`${method}: ${outcome}`);
          return outcome;
        }
        // After a sign-in: the account's passkeys that are still accepted, and its current names.
        async function signalSignedIn(signals) {
          if (!signals) { step("no signals: the account has no user handle here"); return; }
          await sendSignal("signalAllAcceptedCredentials", { rpId: signals.rpId, userId: signals.userId, allAcceptedCredentialIds: signals.allAcceptedCredentialIds });
          await sendSignal("signalCurrentUserDetails", { rpId: signals.rpId, userId: signals.userId, name: signals.name, displayName: signals.displayName });
        }
        let signedInUser = null;
        function setSignedIn(user) {
          signedInUser = user || null;
          $("signed-in").textContent = signedInUser ? `Signed in as ${signedInUser}.` : "Not signed in.";
          $("signed-in").dataset.user = signedInUser || "";
        }

        function hintsOf(text) { return text.split(/[\s,]+/).filter(Boolean); }

        // The browser refused or failed before anything reached the relying party: tell the RP, which prints it.
        async function browserFailed(ceremony, title, error) {
          step(`the browser said ${error.name}: ${error.message}`);
          await post("/client-result", { ceremony, name: error.name || "Error", message: String(error.message || "").slice(0, 1000) })
            .catch((e) => step(`could not report it to the RP: ${e.message}`));
          finish(false, `${title}: ${error.name} ${error.message}`, `${error.name}: ${error.message}`);
        }

        async function register(fields) {
          const title = `register ${fields.username}`;
          await stopConditional();
          started(title);
          try {
            step(`POST /registration/options ${JSON.stringify(fields)}`);
            const options = await post("/registration/options", fields);
            step(`options: RP ID ${options.rp.id}, ${options.excludeCredentials.length} excluded credential(s), hints [${(options.hints || []).join(", ")}]`);
            let credential;
            try {
              step("navigator.credentials.create(): follow your browser and authenticator");
              credential = await navigator.credentials.create({ publicKey: creationOptions(options) });
            } catch (error) {
              return await browserFailed("registration", "register", error);
            }
            step(`created credential ${credential.id}; POST /registration/verify`);
            const verdict = await post("/registration/verify", credentialJSON(credential));
            setSignedIn(verdict.user);
            finish(true, `register ${verdict.user}`, describe(verdict));
            showDecoded(verdict.decoded);
          } catch (error) {
            finish(false, `register: ${error.name} ${error.message}`, `${error.name}: ${error.message}`);
            showDecoded(error.body && error.body.decoded);
          } finally {
            await refreshCredentials();
            startConditional();
          }
        }

        async function signIn(fields) {
          const title = fields.username ? `sign-in ${fields.username}` : "sign-in";
          await stopConditional();
          started(title);
          try {
            step(`POST /authentication/options ${JSON.stringify(fields)}`);
            const options = await post("/authentication/options", fields);
            step(`options: ${options.allowCredentials.length} allowed credential(s), hints [${(options.hints || []).join(", ")}]`);
            let credential;
            try {
              step("navigator.credentials.get(): follow your browser and authenticator");
              credential = await navigator.credentials.get({ publicKey: requestOptions(options) });
            } catch (error) {
              return await browserFailed("authentication", "sign-in", error);
            }
            await verifyAssertion(credential);
          } catch (error) {
            finish(false, `sign-in: ${error.name} ${error.message}`, `${error.name}: ${error.message}`);
          } finally {
            await refreshCredentials();
            startConditional();
          }
        }

        async function verifyAssertion(credential) {
          step(`assertion from credential ${credential.id}; POST /authentication/verify`);
          let verdict;
          try {
            verdict = await post("/authentication/verify", credentialJSON(credential));
          } catch (error) {
            showDecoded(error.body && error.body.decoded);
            // A passkey this RP does not know (deleted here): tell the browser's passkey provider to forget it.
            if (error.name === "unknownCredential") await sendSignal("signalUnknownCredential", { rpId: rpID, credentialId: credential.id });
            throw error;
          }
          setSignedIn(verdict.user);
          await signalSignedIn(verdict.signals);
          finish(true, `sign-in ${verdict.user}`, describe(verdict));
          showDecoded(verdict.decoded);
        }

        // What the authenticator returned, decoded by the relying party: client data, authenticator data (each flag
        // by name, the counter, the AAGUID, the public key as a JWK), the attestation or the signature.
        function showDecoded(decoded) {
          const box = $("decoded");
          box.replaceChildren();
          box.hidden = !decoded;
          if (!decoded) return;
          const section = (title, value) => {
            if (value === undefined) return;
            const heading = document.createElement("h3");
            heading.textContent = title;
            const text = document.createElement("pre");
            text.textContent = JSON.stringify(value, null, 2);
            box.append(heading, text);
          };
          const authData = decoded.authenticatorData || (decoded.attestation && decoded.attestation.authenticatorData);
          if (authData && authData.flags) {
            const heading = document.createElement("h3");
            heading.textContent = "Flags";
            const list = document.createElement("ul");
            list.className = "flags";
            for (const [name, on] of Object.entries(authData.flags)) {
              if (name === "byte") continue;
              const item = document.createElement("li");
              item.textContent = `${name} ${on ? "✓" : "✗"}`;
              if (on) item.className = "on";
              list.append(item);
            }
            box.append(heading, list);
          }
          section("Client data (clientDataJSON)", decoded.clientData);
          section("Authenticator data", authData);
          if (decoded.attestation) section("Attestation", { format: decoded.attestation.format, statement: decoded.attestation.statement });
          section("Signature", decoded.signature);
          if (decoded.userHandle !== undefined) section("User handle", decoded.userHandle);
        }

        // Conditional mediation: passkeys offered in the user name field's autofill while the page is open.
        async function startConditional() {
          if (conditional || autoMode || !window.PublicKeyCredential || typeof PublicKeyCredential.isConditionalMediationAvailable !== "function") return;
          if (!(await PublicKeyCredential.isConditionalMediationAvailable())) { step("conditional mediation: not available"); return; }
          let options;
          try { options = await post("/authentication/options", {}); } catch (error) { step(`conditional options: ${error.message}`); return; }
          const controller = new AbortController();
          const request = navigator.credentials.get({ mediation: "conditional", publicKey: requestOptions(options), signal: controller.signal });
          const current = { controller, settled: request.then(() => {}, () => {}) };
          conditional = current;
          step("conditional sign-in waiting: choose a passkey from the user name field's suggestions");
          request.then(async (credential) => {
            if (conditional !== current) return;
            conditional = null;
            started("sign-in (autofill)");
            try { await verifyAssertion(credential); } catch (error) { finish(false, `sign-in: ${error.name} ${error.message}`, `${error.name}: ${error.message}`); }
            await refreshCredentials();
            startConditional();
          }, async (error) => {
            if (conditional !== current) return; // aborted for a modal ceremony
            conditional = null;
            await browserFailed("authentication", "sign-in (autofill)", error);
          });
        }
        async function stopConditional() {
          const current = conditional;
          if (!current) return;
          conditional = null;
          current.controller.abort(new DOMException("a modal ceremony starts", "AbortError"));
          await current.settled;
        }

        async function refreshCredentials() {
          try {
            const response = await fetch("/credentials");
            const json = await response.json();
            $("rp").textContent = `RP ID ${json.rpId}; origins ${json.origins.join(", ")}`;
            rpID = json.rpId;
            setSignedIn(json.signedIn);
            const body = $("credentials").tBodies[0];
            body.replaceChildren(...json.accounts.map((a) => {
              const row = document.createElement("tr");
              const cells = [["user", a.displayName && a.displayName !== a.user ? `${a.user} (${a.displayName})` : a.user], ["credential ID", a.credentialId, "id"], ["registered", a.registered],
                ["sign count", String(a.signCount)], ["transports", a.transports.join(", ")], ["UV", a.uvInitialized ? "yes" : "no"],
                ["backup", a.backupEligible ? (a.backupState ? "eligible, backed up" : "eligible") : "no"]];
              for (const [label, text, cls] of cells) {
                const cell = document.createElement("td");
                cell.textContent = text;
                cell.dataset.label = label;
                if (cls) cell.className = cls;
                row.append(cell);
              }
              const action = document.createElement("td");
              action.dataset.label = "";
              const button = document.createElement("button");
              button.type = "button";
              button.className = "delete";
              button.textContent = "Delete";
              button.setAttribute("aria-label", `Delete ${a.user}'s passkey ${a.credentialId}`);
              button.addEventListener("click", () => deletePasskey(json.rpId, a));
              action.append(button);
              row.append(action);
              return row;
            }));
            $("none").hidden = json.accounts.length > 0;
          } catch (error) {
            step(`GET /credentials: ${error.message}`);
          }
        }

        // Deleting needs a browser signed in as the passkey's user; the browser's passkey provider is then told, where
        // the Signal API exists, so that it stops offering the passkey (WebAuthn L3 signalUnknownCredential).
        async function deletePasskey(rpID, account) {
          await stopConditional();
          if (!autoMode && !confirm(`Delete ${account.user}'s passkey ${account.credentialId.slice(0, 16)}…? Its authenticator keeps it until told.`)) return;
          started(`delete ${account.user}`);
          try {
            step(`POST /credentials/delete ${account.credentialId}`);
            const answer = await post("/credentials/delete", { credentialId: account.credentialId });
            await sendSignal("signalUnknownCredential", { rpId: answer.rpId || rpID, credentialId: account.credentialId });
            finish(true, `delete ${answer.user}`, describe(answer));
          } catch (error) {
            finish(false, `delete: ${error.name} ${error.message}`, `${error.name}: ${error.message}`);
          }
          await refreshCredentials();
          startConditional();
        }

        // `?auto=delete&user=alice`: deletes the user's passkeys from this browser (signed in as the user).
        async function deleteAll(user) {
          const json = await (await fetch("/credentials")).json();
          const accounts = json.accounts.filter((a) => a.user === user);
          if (accounts.length === 0) { finish(false, `delete: ${user} has no passkey here`, "Nothing to delete."); return; }
          for (const account of accounts) await deletePasskey(json.rpId, account);
        }

        // Password sign-up and sign-in. After a password sign-in the relying party answers with registration options
        // for an automatic passkey upgrade: create() with mediation "conditional" creates a passkey with no dialog
        // where the browser's password manager allows it (it has this password, used just now); a failure is silent
        // for the person and only recorded here (WebAuthn L3 §5.1.3, conditional create).
        async function passwordSignUp(username, password) {
          await stopConditional();
          started(`password sign-up ${username}`);
          try {
            step("POST /password/sign-up (the password is not shown)");
            const answer = await post("/password/sign-up", { username, password });
            setSignedIn(answer.user);
            finish(true, `password sign-up ${answer.user}`, describe(answer));
          } catch (error) {
            finish(false, `password sign-up: ${error.name} ${error.message}`, `${error.name}: ${error.message}`);
          }
          await refreshCredentials();
          startConditional();
        }
        async function passwordSignIn(username, password) {
          await stopConditional();
          started(`password sign-in ${username}`);
          let answer = null;
          try {
            step("POST /password/sign-in (the password is not shown)");
            answer = await post("/password/sign-in", { username, password });
            setSignedIn(answer.user);
            await signalSignedIn(answer.signals);
            finish(true, `password sign-in ${answer.user}`, describe(answer));
          } catch (error) {
            finish(false, `password sign-in: ${error.name} ${error.message}`, `${error.name}: ${error.message}`);
          }
          if (answer && answer.upgrade) await upgradeToPasskey(answer.upgrade);
          await refreshCredentials();
          startConditional();
        }
        async function upgradeToPasskey(options) {
          const box = $("upgrade");
          box.dataset.result = "running";
          box.textContent = "Passkey upgrade: asking the browser (conditional create)…";
          let capable = "unknown";
          try {
            if (typeof PublicKeyCredential.getClientCapabilities === "function") {
              capable = String((await PublicKeyCredential.getClientCapabilities()).conditionalCreate);
            }
          } catch (error) { capable = error.name; }
          step(`conditional create: getClientCapabilities().conditionalCreate is ${capable}; trying it all the same`);
          const controller = new AbortController();
          const timer = setTimeout(() => controller.abort(new DOMException("no answer within 15 s", "TimeoutError")), 15000);
          let credential;
          try {
            credential = await navigator.credentials.create({ publicKey: creationOptions(options), mediation: "conditional", signal: controller.signal });
          } catch (error) {
            box.dataset.result = "none";
            box.textContent = `No passkey upgrade: the browser said ${error.name} (${error.message}).`;
            step(`conditional create: ${error.name} ${error.message}`);
            return;
          } finally {
            clearTimeout(timer);
          }
          try {
            step(`conditional create made credential ${credential.id}; POST /registration/verify`);
            const verdict = await post("/registration/verify", credentialJSON(credential));
            box.dataset.result = "pass";
            box.textContent = `Upgraded: ${verdict.user} has a new passkey ${verdict.credentialId} (user present: ${verdict.userPresent}).`;
          } catch (error) {
            box.dataset.result = "fail";
            box.textContent = `The relying party refused the upgrade: ${error.name} ${error.message}`;
          }
        }
        async function rename() {
          const displayName = $("new-display-name").value.trim();
          if (!signedInUser) { finish(false, "rename: sign in first", "Sign in, then rename."); return; }
          if (!displayName) { finish(false, "rename: a display name is needed", "Type a display name first."); return; }
          started(`rename ${signedInUser}`);
          try {
            step(`POST /account/rename ${JSON.stringify({ username: signedInUser, displayName })}`);
            const answer = await post("/account/rename", { username: signedInUser, displayName });
            const signals = answer.signals;
            if (signals) await sendSignal("signalCurrentUserDetails", { rpId: signals.rpId, userId: signals.userId, name: signals.name, displayName: signals.displayName });
            finish(true, `rename ${answer.renamed}`, describe(answer));
          } catch (error) {
            finish(false, `rename: ${error.name} ${error.message}`, `${error.name}: ${error.message}`);
          }
          await refreshCredentials();
        }

        async function showCapabilities() {
          const lines = [];
          if (!window.PublicKeyCredential) { $("capabilities").textContent = "This browser has no WebAuthn (PublicKeyCredential is missing)."; return; }
          for (const name of ["parseCreationOptionsFromJSON", "parseRequestOptionsFromJSON", "getClientCapabilities", "isConditionalMediationAvailable"]) {
            lines.push(`PublicKeyCredential.${name}: ${typeof PublicKeyCredential[name] === "function" ? "yes" : "no"}`);
          }
          lines.push(`PublicKeyCredential.prototype.toJSON: ${typeof PublicKeyCredential.prototype.toJSON === "function" ? "yes" : "no"}`);
          try {
            lines.push(`user-verifying platform authenticator: ${await PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable()}`);
            if (typeof PublicKeyCredential.getClientCapabilities === "function") {
              lines.push(`getClientCapabilities(): ${JSON.stringify(await PublicKeyCredential.getClientCapabilities(), null, 1)}`);
            }
          } catch (error) {
            lines.push(`${error.name}: ${error.message}`);
          }
          $("capabilities").textContent = lines.join("\n");
        }

        function formFields() {
          const fields = { username: $("username").value.trim(), residentKey: $("resident-key").value,
            userVerification: $("user-verification").value, attestation: $("attestation").value, hints: hintsOf($("hints").value) };
          const display = $("display-name").value.trim();
          if (display) fields.displayName = display;
          return fields;
        }

        // `?steps=register:alice,sign-in:,sign-in:alice`: ceremonies one after another in one page load, for browsers
        // driven without WebDriver. Each step's outcome reaches the RP as usual; the title ends as `DONE n steps`.
        async function runSteps(text) {
          const list = text.split(",").filter(Boolean);
          for (const entry of list) {
            const [ceremony, user = ""] = entry.split(":");
            $("username").value = user;
            const { userVerification, hints } = formFields();
            if (ceremony === "register" && user) {
              await register(formFields());
            } else if (ceremony === "sign-in") {
              await signIn(user ? { username: user, userVerification, hints } : { userVerification, hints });
            } else {
              finish(false, `unknown step ${entry}`, "A step is register:USER or sign-in:[USER].");
              return;
            }
          }
          document.title = `DONE ${list.length} steps`;
        }

        const query = new URLSearchParams(location.search);
        const autoMode = query.get("auto") || (query.has("steps") ? "steps" : null);
        $("register").addEventListener("click", () => {
          const fields = formFields();
          if (!fields.username) { finish(false, "register: a user name is needed", "Type a user name first."); return; }
          register(fields);
        });
        $("password-form").addEventListener("submit", (event) => {
          event.preventDefault();
          passwordSignIn($("password-username").value.trim(), $("password").value);
        });
        $("password-sign-up").addEventListener("click", () => {
          const username = $("password-username").value.trim();
          if (!username || !$("password").value) { finish(false, "password sign-up: a user name and a password are needed", "Type both first."); return; }
          passwordSignUp(username, $("password").value);
        });
        $("rename").addEventListener("click", rename);
        $("sign-in").addEventListener("click", () => {
          const { username, userVerification, hints } = formFields();
          signIn(username ? { username, userVerification, hints } : { userVerification, hints });
        });

        (async () => {
          if (query.has("user")) $("username").value = query.get("user");
          if (query.has("display")) $("display-name").value = query.get("display");
          if (query.has("hints")) $("hints").value = query.get("hints");
          if (query.has("uv")) $("user-verification").value = query.get("uv");
          if (query.has("rk")) $("resident-key").value = query.get("rk");
          if (query.has("attestation")) $("attestation").value = query.get("attestation");
          await refreshCredentials();
          await showCapabilities();
          if (autoMode === "register") {
            $("register").click();
          } else if (autoMode === "sign-in") {
            $("sign-in").click();
          } else if (autoMode === "delete") {
            await deleteAll(query.get("user") || "");
          } else if (autoMode === "steps") {
            await runSteps(query.get("steps"));
          } else if (autoMode) {
            finish(false, `unknown auto=${autoMode}`, "auto is register, sign-in or delete.");
          } else {
            startConditional();
          }
        })();

        """#

    static let html: [UInt8] = Array(
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>passkey relying party</title>
        <style>\(style)</style>
        </head>
        <body>
        <main>
        <h1>passkey relying party</h1>
        <p id="rp">RP ID …</p>
        <form id="form" autocomplete="on">
        <label for="username">User name</label>
        <input id="username" name="username" autocomplete="username webauthn" autocapitalize="none" spellcheck="false" maxlength="64">
        <label for="display-name">Display name</label>
        <input id="display-name" name="display-name" autocomplete="off" maxlength="64">
        <fieldset>
        <legend>Registration and sign-in options</legend>
        <label for="resident-key">Discoverable credential</label>
        <select id="resident-key"><option>required</option><option>preferred</option><option>discouraged</option></select>
        <label for="user-verification">User verification</label>
        <select id="user-verification"><option>preferred</option><option>required</option><option>discouraged</option></select>
        <label for="attestation">Attestation</label>
        <select id="attestation"><option>none</option><option>indirect</option><option>direct</option><option>enterprise</option></select>
        <label for="hints">Hints</label>
        <input id="hints" name="hints" autocomplete="off" placeholder="security-key, client-device, hybrid">
        </fieldset>
        <div class="buttons">
        <button type="button" id="register" class="primary">Register</button>
        <button type="button" id="sign-in">Sign in</button>
        </div>
        </form>
        <p id="signed-in" data-user="">Not signed in.</p>
        <h2>Verdict</h2>
        <pre id="verdict" role="status" aria-live="polite">Nothing yet.</pre>
        <div id="decoded" hidden></div>
        <details>
        <summary>Steps</summary>
        <ol id="steps"></ol>
        </details>
        <h2 id="password-heading">Password</h2>
        <form id="password-form" autocomplete="on">
        <label for="password-username">User name</label>
        <input id="password-username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="64">
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" maxlength="256">
        <div class="buttons">
        <button type="submit" id="password-sign-in" class="primary">Sign in with password</button>
        <button type="button" id="password-sign-up">Sign up with password</button>
        </div>
        </form>
        <pre id="upgrade" data-result="none">No passkey upgrade yet: sign in with a password.</pre>
        <h2 id="account">Account</h2>
        <form id="rename-form" autocomplete="off">
        <label for="new-display-name">New display name</label>
        <input id="new-display-name" name="new-display-name" autocomplete="off" maxlength="64">
        <div class="buttons">
        <button type="button" id="rename">Rename</button>
        </div>
        </form>
        <h2 id="passkeys">Registered passkeys</h2>
        <table id="credentials">
        <thead><tr><th>user</th><th>credential ID</th><th>registered</th><th>sign count</th><th>transports</th><th>UV</th><th>backup</th><th></th></tr></thead>
        <tbody></tbody>
        </table>
        <p id="none">None yet.</p>
        <h2 id="signals">Signals sent to the browser</h2>
        <ol id="signal-log"></ol>
        <p id="no-signals">None yet.</p>
        <h2>This browser</h2>
        <pre id="capabilities">…</pre>
        </main>
        <script>\(script)</script>
        </body>
        </html>

        """.utf8)

    /// `default-src 'none'`, with the inline script and style allowed by hash, fetches to the same origin only.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src '\(hash(script))'; style-src '\(hash(style))'; connect-src 'self'; "
        + "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let response = RelyingPartySite.Response(
        status: 200,
        headers: [
            .init(name: "Content-Type", value: "text/html; charset=utf-8"),
            .init(name: "Content-Security-Policy", value: contentSecurityPolicy),
            .init(name: "Referrer-Policy", value: "no-referrer"),
        ] + RelyingPartySite.commonHeaders,
        body: html)

    /// A CSP source expression for `text`: `sha256-` and the base64 of its SHA-256.
    private static func hash(_ text: String) -> String {
        "sha256-" + Data(SHA256.hash(data: Array(text.utf8))).base64EncodedString()
    }
}
