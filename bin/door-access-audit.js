#!/usr/bin/env node
"use strict";
// door-access-audit: check (verify) and read (tail, export --csv) an audit log of @door-access/node-red (see --help).
let cli;
try {
  cli = require("../dist/src/audit/cli.js");
} catch (err) {
  if (err && err.code === "MODULE_NOT_FOUND") {
    process.stderr.write("door-access-audit: compiled files not found; run `npm run build` first\n");
    process.exit(2);
  }
  throw err;
}
// Piped into `head`: the reader went away; stop quietly.
process.stdout.on("error", (err) => {
  if (err && err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  process.stderr.write(`door-access-audit: ${err.message}\n`);
  process.exit(2);
});
cli.main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`door-access-audit: ${err && err.message ? err.message : err}\n`);
    process.exitCode = 2;
  },
);
