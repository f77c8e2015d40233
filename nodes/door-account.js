"use strict";
// Node-RED entry point; the logic is compiled from src/nodes/door-account.ts
module.exports = require("../dist/src/nodes/door-account.js");
