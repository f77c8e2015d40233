/**
 * Node-RED's real adminAuth for the admin-route tests (not a test file itself). The test helper
 * stubs RED.auth.needsPermission with a pass-through; here the editor API's own auth module is
 * set up with users, each gets a bearer token, and a node module can be given its real
 * needsPermission, as a runtime with adminAuth set gives it.
 */
import * as path from "node:path";
import { resolveFromNodeRed } from "./runtime.js";

/** A user of adminAuth: its name and its permissions ("*", "read" or a list). */
export interface AdminUser {
  username: string;
  permissions: string | string[];
}

/** The editor API's auth module (untyped: Node-RED ships no declarations). */
export type NodeRedAuth = any;

// Never checked: every request carries a token made for the user, no password login happens.
const UNUSED_HASH = "$2y$08$unused.hash.unused.hash.unused.hash.unused.hash.unus";

/**
 * Node-RED's auth set up with adminAuth of these users (type "credentials"), and a bearer token
 * for each, by user name.
 */
export async function realAdminAuth(
  users: AdminUser[],
): Promise<{ auth: NodeRedAuth; tokens: Record<string, string> }> {
  const editorApi = path.dirname(resolveFromNodeRed("@node-red/editor-api/package.json"));
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a module inside the selected Node-RED, found at run time
  const auth = require(path.join(editorApi, "lib", "auth"));
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a module inside the selected Node-RED, found at run time
  const tokenStore = require(path.join(editorApi, "lib", "auth", "tokens"));
  auth.init(
    {
      adminAuth: {
        type: "credentials",
        users: users.map((u) => ({ username: u.username, password: UNUSED_HASH, permissions: u.permissions })),
      },
    },
    { getSessions: () => Promise.resolve({}), saveSessions: () => Promise.resolve() },
  );
  const tokens: Record<string, string> = {};
  for (const u of users)
    tokens[u.username] = (await tokenStore.create(u.username, "node-red-editor", u.permissions)).accessToken;
  return { auth, tokens };
}

/** A node or plugin module given Node-RED's real RED.auth.needsPermission when it is loaded. */
export function withNeedsPermission(auth: NodeRedAuth, mod: (red: any) => void): (red: any) => void {
  return (red: any) => {
    red.auth = { needsPermission: auth.needsPermission };
    return mod(red);
  };
}
