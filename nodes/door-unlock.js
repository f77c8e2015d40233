"use strict";
// Node-RED entry point; the logic is compiled from src/nodes/door-unlock.ts
module.exports = require("../dist/src/nodes/door-unlock.js");
