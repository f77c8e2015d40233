/**
 * door-account in the editor: its definition (RED.nodes.registerType) and its dialog
 * (editor/template.html): one API account on one environment, its session's state, Reconnect and
 * Sign in. The runtime (door-account.ts) reads exactly these properties: name, baseUrl,
 * loginMethod, auditLog, auditMaxBytes, auditKeep, sessionStore, redisUrl, redisKeyPrefix,
 * specCheck, docsUrl, and the credentials phoneNumber, email, password, redisPassword.
 *
 * The base URL is checked by the runtime's own rule (src/client/base-url.ts, with the loopback
 * rule of src/util/loopback.ts), bundled into this editor. The build (scripts/editor-build.ts)
 * bundles this file with what it imports into the node's door-account.html
 * (docs/architecture.md#the-editor-where-a-node-lives-and-how-it-is-built).
 */
import { accountLabel } from "../../../src/account/label.js";
import { parseBaseUrl } from "../../../src/client/base-url.js";
import { textOf } from "../../../src/util/text.js";
import { STORED } from "../../common/editor/credentials.js";
import type { EditorNode } from "../../common/editor/red.js";
import { adminError, notifyText } from "../../common/editor/text.js";
import { catalogueOf, nodeTranslator } from "../../common/editor/i18n.js";

interface DoorAccountNode extends EditorNode {
  name?: string;
  baseUrl?: string;
  loginMethod?: string;
  sessionStore?: string;
  _doorAccountStop?: () => void;
}

const t = nodeTranslator("door-account");
const PHONE = /^[+][0-9]{9,13}$/;

function text(v: unknown): string {
  return textOf(v ?? "");
}

/** The runtime's base URL rule: https://, or http:// to a loopback host; no user, query or fragment. */
function isValidBaseUrl(v: unknown): boolean {
  try {
    parseBaseUrl(text(v).trim());
    return true;
  } catch {
    return false;
  }
}

function isValidRedisUrl(v: unknown): boolean {
  let u: URL;
  try {
    u = new URL(text(v).trim());
  } catch {
    return false;
  }
  // A password belongs in the Redis password field (a credential), not in the flow file.
  return (u.protocol === "redis:" || u.protocol === "rediss:") && !!u.hostname && !u.password;
}

/** A select of the dialog being edited, else the stored value, else `fallback`. */
function current(id: string, stored: string | undefined, fallback: string): string {
  const sel = $(`#node-config-input-${id}`);
  const m = sel.length ? sel.val() : stored;
  return typeof m === "string" && m !== "" ? m : fallback;
}

function normalisePhone(v: unknown): string {
  return text(v).replace(/[\s\-().]/g, "");
}

type Colour = "green" | "yellow" | "red" | "grey";

function stateColour(state: string): Colour {
  if (state === "ready") return "green";
  if (state === "logging-in" || state === "refreshing" || state === "idle") return "yellow";
  if (state === "closed") return "grey";
  return "red";
}

// The error text of a failed admin request: the endpoint's { error } when it sent one
// (nodes/common/editor/text.ts), else the HTTP status text. Every notification is made from text: its
// error part is the runtime's words, which can quote the flow (a base URL, a name) or the service.
function errorText(xhr: JQuery.jqXHR): string {
  return adminError(xhr) || xhr.statusText || String(xhr.status);
}

/** The answer of the state endpoint. */
interface StateBody {
  state?: unknown;
  halted?: unknown;
  message?: unknown;
  reason?: unknown;
  detail?: unknown;
}

function isHalt(body: StateBody | null): boolean {
  if (!body) return false;
  if (body.halted === true) return true;
  return typeof body.state === "string" && body.state.indexOf("halted") === 0;
}

function stopPolling(node: DoorAccountNode): void {
  if (node._doorAccountStop) {
    node._doorAccountStop();
    delete node._doorAccountStop;
  }
}

RED.nodes.registerType<DoorAccountNode>("door-account", {
  category: "config",
  defaults: {
    name: { value: "" },
    baseUrl: {
      value: "",
      required: true,
      label: t("label.baseUrl"),
      validate(v, _opt) {
        if (isValidBaseUrl(v)) return true;
        // "127.0.0.1:18787", "door.example.com": the scheme is missing.
        const typed = text(v).trim();
        if (typed && !/^[a-z][a-z0-9+.-]*:(?!\d)/i.test(typed)) return t("errors.base-url-no-scheme");
        return t("errors.invalid-base-url");
      },
    },
    loginMethod: {
      value: "phone",
      validate(v, _opt) {
        return v === "phone" || v === "email" || v === "login";
      },
    },
    auditLog: { value: "" },
    auditMaxBytes: {
      value: "10485760",
      validate(v, _opt) {
        if (v === undefined || v === "" || /^\s*\d{1,15}\s*$/.test(text(v))) return true;
        return t("errors.invalid-audit-max-bytes");
      },
    },
    auditKeep: {
      value: "10",
      validate(v, _opt) {
        if (v === undefined || v === "" || /^\s*\d{1,6}\s*$/.test(text(v))) return true;
        return t("errors.invalid-audit-keep");
      },
    },
    sessionStore: {
      value: "file",
      validate(v, _opt) {
        return v === undefined || v === "" || v === "file" || v === "redis";
      },
    },
    redisUrl: {
      value: "",
      validate(v, _opt) {
        if (current("sessionStore", this.sessionStore, "file") !== "redis" || isValidRedisUrl(v)) return true;
        return t("errors.invalid-redis-url");
      },
    },
    redisKeyPrefix: {
      value: "door-access:",
      validate(v, _opt) {
        if (v === undefined || v === "" || (text(v).length <= 100 && !/\s/.test(text(v)))) return true;
        return t("errors.invalid-redis-prefix");
      },
    },
    // The service description check (docs/service-description.md): on by default;
    // docsUrl empty = the base URL.
    specCheck: { value: true },
    docsUrl: {
      value: "",
      validate(v, _opt) {
        if (v === undefined || text(v).trim() === "" || isValidBaseUrl(v)) return true;
        return t("errors.invalid-docs-url");
      },
    },
  },
  credentials: {
    phoneNumber: {
      type: "password",
      validate(v, _opt) {
        if (v === undefined || current("loginMethod", this.loginMethod, "phone") === "email") return true;
        // STORED: a stored value the editor is never shown.
        if (v === STORED || PHONE.test(normalisePhone(v))) return true;
        return normalisePhone(v) === "" ? t("errors.missing-phone") : t("errors.invalid-phone");
      },
    },
    email: {
      type: "password",
      validate(v, _opt) {
        if (v === undefined || v === STORED || current("loginMethod", this.loginMethod, "phone") !== "email") {
          return true;
        }
        if (/^[^\s@]+@[^\s@]+$/.test(text(v).trim())) return true;
        return t("errors.invalid-email");
      },
    },
    password: {
      type: "password",
      validate(v, _opt) {
        if (v === undefined || v === STORED || text(v).length > 0) return true;
        return t("errors.missing-password");
      },
    },
    redisPassword: { type: "password" },
  },
  paletteLabel() {
    return t("paletteLabel");
  },
  label() {
    return accountLabel(this.name, this.baseUrl, t("label.default"));
  },
  oneditprepare() {
    const node = this;
    const base = `door-access/accounts/${encodeURIComponent(node.id)}`;
    let pollTimer: ReturnType<typeof setInterval> | null = null;
    let closed = false;
    let seq = 0;

    // Show the phone row or the email row according to the login method.
    const methodSel = $("#node-config-input-loginMethod");
    if (!methodSel.val()) methodSel.val("phone");
    function showCredentialRows(): void {
      const email = methodSel.val() === "email";
      $("#door-account-row-phone").toggle(!email);
      $("#door-account-row-email").toggle(email);
    }
    methodSel.on("change", showCredentialRows);
    showCredentialRows();

    // The Redis rows only when the session is shared through Redis.
    const storeSel = $("#node-config-input-sessionStore");
    if (!storeSel.val()) storeSel.val("file");
    if (!$("#node-config-input-redisKeyPrefix").val()) $("#node-config-input-redisKeyPrefix").val("door-access:");
    function showStoreRows(): void {
      $(".door-account-redis-row").toggle(storeSel.val() === "redis");
    }
    storeSel.on("change", showStoreRows);
    showStoreRows();

    // The docs URL matters only while the service description check is on.
    const specCheckBox = $("#node-config-input-specCheck");
    function enableDocsUrl(): void {
      $("#node-config-input-docsUrl").prop("disabled", !specCheckBox.prop("checked"));
    }
    specCheckBox.on("change", enableDocsUrl);
    enableDocsUrl();

    // Let the operator see what they type (never the stored value,
    // which the editor does not have).
    (["phone", "email"] as const).forEach((which) => {
      $(`#door-account-show-${which}`).on("click", function (evt) {
        evt.preventDefault();
        const input = $(`#node-config-input-${which === "phone" ? "phoneNumber" : "email"}`);
        if (input.val() === STORED) return;
        const hidden = input.attr("type") === "password";
        input.attr("type", hidden ? "text" : "password");
        $(this).find("i").toggleClass("fa-eye", !hidden).toggleClass("fa-eye-slash", hidden);
      });
    });

    // Session state of the deployed account.
    const stateText = $("#door-account-session-state");
    const stateDot = $("#door-account-session-dot");
    const reconnectBtn = $("#door-account-reconnect");
    const dotColours: Record<Colour, string> = { green: "#5a8", yellow: "#F9DF31", red: "#c00", grey: "#aaa" };

    function showState(colour: Colour, label: string, canReconnect: boolean): void {
      stateDot.css("color", dotColours[colour] || "#aaa");
      stateText.text(label);
      reconnectBtn.prop("disabled", !canReconnect);
    }

    function describe(body: StateBody | null): { colour: Colour; text: string } {
      const state = body && typeof body.state === "string" ? body.state : "";
      let label = state ? t(`state.${state}`) : "";
      if (
        !state ||
        label === `${catalogueOf("door-account")}:door-account.state.${state}` ||
        label === `door-account.state.${state}`
      ) {
        label = t("session.unknown", { state: state || "?" });
      }
      const detail = body && (body.message || body.reason || body.detail);
      if (detail && typeof detail === "string" && detail !== label) label += ` (${detail})`;
      return { colour: stateColour(state), text: label };
    }

    // Sign in before the first deploy: the values typed in this dialog go to the runtime
    // once, in a POST body (door-account.write); nothing comes back but the outcome. A
    // credential the editor was never shown stays STORED: the runtime then uses the
    // deployed node's. The pair is stored under the account key: the deploy resumes it.
    const signInRow = $("#door-account-sign-in-row");
    const signInBtn = $("#door-account-sign-in");
    let signInShown: { colour: Colour; text: string } | null = null;
    signInRow.hide();

    function loadState(): void {
      const mine = ++seq;
      $.ajax({
        url: `${base}/state`,
        dataType: "json",
        cache: false,
        timeout: 15000,
      })
        .done((body: StateBody | null) => {
          if (closed || mine !== seq) return;
          const d = describe(body);
          signInRow.hide();
          showState(d.colour, d.text, isHalt(body));
        })
        .fail((xhr: JQuery.jqXHR) => {
          if (closed || mine !== seq) return;
          if (xhr.status === 404 || xhr.status === 503) {
            // Not deployed: the answer of the last sign-in stays until the next press.
            if (signInShown) showState(signInShown.colour, signInShown.text, false);
            else showState("grey", t("session.not-running"), false);
            signInRow.show();
          } else {
            showState("red", t("session.error", { error: errorText(xhr) }), false);
          }
        });
    }

    reconnectBtn.on("click", (evt) => {
      evt.preventDefault();
      reconnectBtn.prop("disabled", true);
      showState("yellow", t("session.reconnecting"), false);
      $.ajax({
        url: `${base}/reconnect`,
        method: "POST",
        headers: { "X-Requested-With": "XMLHttpRequest" },
        contentType: "application/json",
        data: "{}",
        dataType: "text",
        timeout: 35000,
      })
        .always(() => {
          if (!closed) loadState();
        })
        .done(() => {
          if (!closed) notifyText(t("session.reconnect-requested"), "success");
        })
        .fail((xhr: JQuery.jqXHR) => {
          if (closed) return;
          if (xhr.status === 404 || xhr.status === 503) {
            notifyText(t("session.not-deployed"), "warning");
          } else {
            notifyText(t("session.reconnect-failed", { error: errorText(xhr) }), "error");
          }
        });
    });

    function showSignIn(colour: Colour, shown: string): void {
      signInShown = { colour, text: shown };
      showState(colour, shown, false);
    }
    function typedValue(id: string): string {
      return String($(`#node-config-input-${id}`).val() || "");
    }
    // A session of another login runs on the same service here: the runtime sent nothing
    // and asks for the operator's word (docs/session.md#signing-in-from-the-editor). The
    // button then reads "Sign in anyway" for that base URL and login only; changing either
    // takes the confirmation back.
    let confirmFor: string | null = null;
    function loginOf(body: { baseUrl: string; loginMethod: string; phoneNumber: string; email: string }): string {
      return JSON.stringify([body.baseUrl, body.loginMethod, body.phoneNumber, body.email]);
    }
    function setConfirm(login: string | null): void {
      confirmFor = login;
      signInBtn
        .find("span")
        .first()
        .text(t(login === null ? "session.sign-in" : "session.sign-in-anyway"));
    }
    $(
      "#node-config-input-baseUrl, #node-config-input-loginMethod, #node-config-input-phoneNumber, #node-config-input-email",
    ).on("input change", () => {
      if (confirmFor !== null) setConfirm(null);
    });
    signInBtn.on("click", (evt) => {
      evt.preventDefault();
      signInBtn.prop("disabled", true);
      showState("yellow", t("session.signing-in"), false);
      const body = {
        baseUrl: typedValue("baseUrl").trim(),
        loginMethod: String(methodSel.val() || "phone"),
        phoneNumber: typedValue("phoneNumber") === STORED ? STORED : normalisePhone(typedValue("phoneNumber")),
        email: typedValue("email").trim(),
        password: typedValue("password"),
        sessionStore: String(storeSel.val() || "file"),
        redisUrl: typedValue("redisUrl").trim(),
        redisKeyPrefix: typedValue("redisKeyPrefix"),
        redisPassword: typedValue("redisPassword"),
        confirm: undefined as true | undefined,
      };
      const login = loginOf(body);
      if (confirmFor !== null && confirmFor === login) body.confirm = true;
      setConfirm(null);
      $.ajax({
        url: `${base}/sign-in`,
        method: "POST",
        headers: { "X-Requested-With": "XMLHttpRequest" },
        contentType: "application/json",
        data: JSON.stringify(body),
        dataType: "json",
        timeout: 35000,
      })
        .done((res: { signedIn?: unknown; already?: unknown } | null) => {
          if (closed) return;
          if (res && res.signedIn === false) {
            // A session of this login runs, but the password typed was not checked
            // (that needs a login, which would end the session): no success is claimed.
            const unchecked = t("errors.password-not-checked");
            showSignIn("yellow", unchecked);
            notifyText(unchecked, "warning");
            return;
          }
          const shown = res && res.already ? t("session.already") : t("session.signed-in");
          showSignIn("green", shown);
          notifyText(shown, "success");
        })
        .fail((xhr: JQuery.jqXHR) => {
          if (closed) return;
          const answer = xhr.responseJSON as { confirm?: unknown } | undefined;
          if (xhr.status === 409 && answer && answer.confirm === true && !body.confirm) {
            const warning = errorText(xhr);
            showSignIn("yellow", warning);
            notifyText(warning, "warning");
            setConfirm(login);
            return;
          }
          const shown = t("session.sign-in-failed", { error: errorText(xhr) });
          showSignIn("red", shown);
          notifyText(shown, "error");
        })
        .always(() => {
          if (!closed) signInBtn.prop("disabled", false);
        });
    });

    showState("grey", t("session.loading"), false);
    loadState();
    pollTimer = setInterval(loadState, 5000);

    node._doorAccountStop = () => {
      closed = true;
      if (pollTimer) {
        clearInterval(pollTimer);
        pollTimer = null;
      }
    };
  },
  oneditsave() {
    const phone = $("#node-config-input-phoneNumber");
    if (phone.val() !== STORED) phone.val(normalisePhone(phone.val()));
    for (const id of ["baseUrl", "email", "redisUrl", "docsUrl"]) {
      const input = $(`#node-config-input-${id}`);
      input.val(String(input.val() || "").trim());
    }
    stopPolling(this);
  },
  oneditcancel() {
    stopPolling(this);
  },
  oneditdelete() {
    stopPolling(this);
  },
});
