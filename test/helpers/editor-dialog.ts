/**
 * Waiting for a Node-RED edit dialog to be ready to type into.
 *
 * The editor shows a dialog (its tray, its Done button) before it is ready: for a node with
 * credentials it first fetches them, then builds the form and runs oneditprepare; and 150 ms after
 * the tray has slid in (later on a busy machine) it moves the focus to the dialog's first field.
 * Keys typed before that can land in that first field instead of the one a test focused. The
 * dialog is ready once the focus is inside its tray.
 */
import type { Page } from "playwright-core";

export async function dialogReady(page: Page, timeout = 30_000): Promise<void> {
  await page.waitForFunction(
    () => {
      const trays = document.querySelectorAll(".red-ui-tray");
      const top = trays[trays.length - 1];
      const body = top?.querySelector(".red-ui-tray-body");
      return !!body && body.querySelector(".red-ui-tabs") !== null && body.contains(document.activeElement);
    },
    null,
    { timeout },
  );
}
