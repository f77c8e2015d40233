"use strict";
// Node-RED plugin entry point (the "Door access" sidebar tab); the runtime part is compiled from src/plugin/sidebar.ts
module.exports = require("../../dist/src/plugin/sidebar.js");
