/*
 * The "Access rules" section of the door-unlock dialog (docs/access-rules.md): the allowed
 * actors as an editable list, the weekly schedule as a weekday grid with from/to times per
 * window, the time zone from the browser's list, the cooldown in seconds and the PIN (a
 * Node-RED password credential that the dialog never shows), plus the checks the node's
 * `defaults` validate with. Node-RED serves this file from the package's resources/ folder;
 * nodes/door-unlock.html loads it with <script src="resources/@door-access/node-red/access-rules-editor.js">.
 *
 * The checks follow the runtime's reading of the rules (src/unlock/access-rules.ts,
 * docs/access-rules.md#configuration-errors): a rule the runtime cannot read is flagged here
 * too. They return a problem key (fixed text in the node's catalogue), never text made from
 * the value: the editor shows a validator's answer as HTML (docs/security.md#text-in-the-editor-and-the-dashboard).
 * Everything the section puts in the page is set with .text(), .val() or .attr().
 */
(function () {
  "use strict";
  if (window.DoorAccessRules) {
    return;
  }

  var HHMM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;
  var PIN_FORMAT = /^[0-9]{4,12}$/;
  // eslint-disable-next-line no-control-regex -- control characters (C0, DEL) are what it finds
  var CONTROL = /[\u0000-\u001f\u007f]/;
  var MAX_PATTERN_LENGTH = 200;
  var MAX_COOLDOWN_SECONDS = 86400;
  var DAY_KEYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]; // ISO 1 .. 7
  /** What Node-RED puts in a password field whose value is stored but not sent to the editor. */
  var STORED = "__PWRD__";

  function isEmpty(v) {
    return v === undefined || v === null || v === "";
  }

  // ---- checks (null = fine, else a problem key) -------------------------------------------

  function actorsProblem(v) {
    if (isEmpty(v)) {
      return null;
    }
    if (!Array.isArray(v)) {
      return "allow-actors";
    }
    for (var i = 0; i < v.length; i++) {
      var p = v[i];
      if (
        typeof p !== "string" ||
        p.trim() === "" ||
        p !== p.trim() ||
        p.length > MAX_PATTERN_LENGTH ||
        CONTROL.test(p)
      ) {
        return "allow-actors";
      }
    }
    return null;
  }

  function windowProblem(w) {
    if (typeof w !== "object" || w === null || Array.isArray(w)) {
      return "schedule";
    }
    if (!Array.isArray(w.days) || w.days.length === 0) {
      return "schedule-days";
    }
    for (var i = 0; i < w.days.length; i++) {
      var d = w.days[i];
      if (typeof d !== "number" || Math.floor(d) !== d || d < 1 || d > 7) {
        return "schedule-days";
      }
    }
    if (typeof w.from !== "string" || !HHMM.test(w.from)) {
      return "schedule-times";
    }
    if (typeof w.to !== "string" || !(w.to === "24:00" || HHMM.test(w.to))) {
      return "schedule-times";
    }
    if (w.from === w.to && w.from !== "00:00") {
      return "schedule-length";
    }
    return null;
  }

  function scheduleProblem(v) {
    if (isEmpty(v)) {
      return null;
    }
    if (!Array.isArray(v)) {
      return "schedule";
    }
    for (var i = 0; i < v.length; i++) {
      var p = windowProblem(v[i]);
      if (p) {
        return p;
      }
    }
    return null;
  }

  function zoneProblem(v) {
    if (isEmpty(v)) {
      return null;
    }
    if (typeof v !== "string") {
      return "time-zone";
    }
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: v }).format(0);
      return null;
    } catch (e) {
      return "time-zone";
    }
  }

  function cooldownValue(v) {
    if (isEmpty(v)) {
      return 0;
    }
    var n = typeof v === "string" && /^\s*[0-9]+\s*$/.test(v) ? Number(v) : v;
    if (typeof n !== "number" || Math.floor(n) !== n || n < 0 || n > MAX_COOLDOWN_SECONDS) {
      return null;
    }
    return n;
  }

  function cooldownProblem(v) {
    return cooldownValue(v) === null ? "cooldown" : null;
  }

  /** The PIN field's value: empty (no PIN / keep), the stored placeholder, or 4 to 12 digits. */
  function pinProblem(v) {
    if (isEmpty(v) || v === STORED) {
      return null;
    }
    return typeof v === "string" && PIN_FORMAT.test(v) ? null : "pin";
  }

  // ---- whether a node has a PIN (for its label) ---------------------------------------------

  // The editor is never sent a PIN, only whether one is stored (`has_pin`); it is asked once per
  // node (the same request the dialog makes) and remembered here, since Node-RED drops a node's
  // credentials from the editor at every deploy.
  var pinKnown = {};
  var pinAsked = {};

  function pinFromCredentials(node) {
    var c = node.credentials;
    if (!c) {
      return undefined;
    }
    if (typeof c.pin === "string") {
      return c.pin !== "";
    }
    if (typeof c.has_pin === "boolean") {
      return c.has_pin;
    }
    return undefined;
  }

  function hasPin(node) {
    var local = pinFromCredentials(node);
    if (local !== undefined) {
      return local;
    }
    if (Object.prototype.hasOwnProperty.call(pinKnown, node.id)) {
      return pinKnown[node.id];
    }
    if (!pinAsked[node.id] && typeof $ !== "undefined" && node.id) {
      pinAsked[node.id] = true;
      var id = node.id;
      $.ajax({ url: "credentials/door-unlock/" + encodeURIComponent(id), dataType: "json", cache: false })
        .done(function (data) {
          var has = !!(data && data.has_pin === true);
          if (pinKnown[id] === undefined) {
            pinKnown[id] = has;
          }
          var n = RED.nodes.node(id);
          if (has && n) {
            n.dirty = true;
            RED.view.redraw();
          }
        })
        .fail(function () {
          // Not allowed to ask (no credentials.read), or no answer: the label says nothing
          // of a PIN, and is not asked again (the label is drawn often).
        });
    }
    return false;
  }

  function setPinKnown(id, has) {
    pinKnown[id] = !!has;
    pinAsked[id] = true;
  }

  /** Whether any rule is set on the node (its label says so). */
  function hasRules(node) {
    if (Array.isArray(node.allowActors) && node.allowActors.length > 0) {
      return true;
    }
    if (Array.isArray(node.schedule) && node.schedule.length > 0) {
      return true;
    }
    var c = cooldownValue(node.cooldown);
    if (c === null || c > 0) {
      return true;
    }
    if (actorsProblem(node.allowActors) || scheduleProblem(node.schedule)) {
      return true;
    }
    return node.pinSet === true || hasPin(node);
  }

  // ---- the time zones -----------------------------------------------------------------------

  function zoneNames() {
    try {
      if (typeof Intl.supportedValuesOf === "function") {
        return Intl.supportedValuesOf("timeZone").slice();
      }
    } catch (e) {
      /* an old browser: the stored zone and UTC only */
    }
    return ["UTC"];
  }

  // ---- the dialog section -------------------------------------------------------------------

  /**
   * Fills the section of the dialog (the elements of nodes/door-unlock.html's template) from
   * the node, and returns { save(node) } for oneditsave. `t(key, opts)` is the node's RED._
   * for keys under "door-unlock.rules.".
   */
  function section(node, t) {
    var actorsList = $("#door-unlock-actors");
    var scheduleList = $("#door-unlock-schedule");
    var zoneSel = $("#door-unlock-timeZone");
    var cooldownInput = $("#door-unlock-cooldown");
    var pinInput = $("#node-input-pin");
    var pinState = $("#door-unlock-pin-state");
    var pinRemove = $("#door-unlock-pin-remove");

    // ---- actors: one per row
    actorsList.editableList({
      addButton: t("add-actor"),
      height: "auto",
      removable: true,
      sortable: false,
      scrollOnAdd: false,
      addItem: function (row, index, data) {
        var input = $('<input type="text" class="door-unlock-actor" style="width: 100%; box-sizing: border-box;">')
          .attr("placeholder", t("actor-placeholder"))
          .attr("maxlength", String(MAX_PATTERN_LENGTH + 20))
          .val(typeof data.actor === "string" ? data.actor : "")
          .appendTo(row);
        function check() {
          var v = String(input.val() || "").trim();
          input.toggleClass("input-error", v !== "" && (v.length > MAX_PATTERN_LENGTH || CONTROL.test(v)));
        }
        input.on("change keyup paste", check);
        check();
      },
    });
    (Array.isArray(node.allowActors) ? node.allowActors : []).forEach(function (a) {
      actorsList.editableList("addItem", { actor: typeof a === "string" ? a : String(a) });
    });

    // ---- schedule: a weekday grid with from/to per window
    function windowRow(row, data) {
      row.addClass("door-unlock-window");
      var days = $('<div class="door-unlock-days"></div>').appendTo(row);
      var chosen = Array.isArray(data.days) ? data.days : [];
      DAY_KEYS.forEach(function (k, i) {
        var label = $('<label class="door-unlock-day-label"></label>').appendTo(days);
        $('<input type="checkbox" class="door-unlock-day">')
          .val(String(i + 1))
          .prop("checked", chosen.indexOf(i + 1) !== -1)
          .appendTo(label);
        $("<span></span>")
          .text(t("day." + k))
          .appendTo(label);
      });
      var times = $('<div class="door-unlock-times"></div>').appendTo(row);
      $('<span class="door-unlock-time-label"></span>').text(t("from")).appendTo(times);
      var from = $('<input type="time" class="door-unlock-from" step="60">')
        .val(typeof data.from === "string" ? data.from : "")
        .appendTo(times);
      $('<span class="door-unlock-time-label"></span>').text(t("to")).appendTo(times);
      var to = $('<input type="time" class="door-unlock-to" step="60">')
        .val(typeof data.to === "string" ? (data.to === "24:00" ? "00:00" : data.to) : "")
        .appendTo(times);
      var hint = $('<div class="door-unlock-window-hint"></div>').appendTo(row);
      function check() {
        var w = readWindow(row);
        var p = windowProblem(w);
        days.toggleClass("input-error", p === "schedule-days");
        from.toggleClass("input-error", !HHMM.test(w.from) || p === "schedule-length");
        to.toggleClass("input-error", !HHMM.test(w.to) || p === "schedule-length");
        if (p === "schedule-days") {
          hint.text(t("hint-days"));
        } else if (p) {
          hint.text(t(p === "schedule-length" ? "hint-length" : "hint-times"));
        } else if (w.from === "00:00" && w.to === "00:00") {
          hint.text(t("hint-whole-day"));
        } else if (w.to === "00:00") {
          hint.text(t("hint-midnight"));
        } else if (w.to < w.from) {
          hint.text(t("hint-overnight", { to: w.to }));
        } else {
          hint.text("");
        }
        hint.toggleClass("door-unlock-window-problem", !!p);
      }
      row.on("change input", "input", check);
      check();
    }
    scheduleList.editableList({
      addButton: t("add-window"),
      height: "auto",
      removable: true,
      sortable: false,
      scrollOnAdd: false,
      addItem: function (row, index, data) {
        windowRow(row, data);
      },
    });
    (Array.isArray(node.schedule) ? node.schedule : []).forEach(function (w) {
      scheduleList.editableList("addItem", w && typeof w === "object" ? w : {});
    });

    // ---- time zone: the browser's list; empty = the runtime's zone
    var stored = typeof node.timeZone === "string" ? node.timeZone : "";
    $("<option>").val("").text(t("runtime-zone")).appendTo(zoneSel);
    var names = zoneNames();
    if (stored !== "" && names.indexOf(stored) === -1) {
      $("<option>")
        .val(stored)
        .text(t("zone-not-listed", { zone: stored }))
        .appendTo(zoneSel);
    }
    names.forEach(function (z) {
      $("<option>").val(z).text(z).appendTo(zoneSel);
    });
    zoneSel.val(stored);
    function checkZone() {
      zoneSel.toggleClass("input-error", zoneProblem(zoneSel.val()) !== null);
    }
    zoneSel.on("change", checkZone);
    checkZone();

    // ---- cooldown (seconds)
    cooldownInput.val(isEmpty(node.cooldown) ? "0" : String(node.cooldown));
    function checkCooldown() {
      cooldownInput.toggleClass("input-error", cooldownProblem(String(cooldownInput.val()).trim()) !== null);
    }
    cooldownInput.on("change keyup input", checkCooldown);
    checkCooldown();

    // ---- PIN: never shown. Node-RED fills the field before this runs: "__PWRD__" for a
    // stored PIN, or the digits typed since the last deploy; both are taken out of the page.
    var initial = String(pinInput.val() || "");
    var hadPin = initial !== "";
    // A runtime that answered nothing about the PIN (a node never deployed, or a runtime that
    // does not know the credential) has none: recorded as Node-RED records "none stored", so
    // that an untouched empty field sends no credential at the next deploy.
    var c = node.credentials;
    if (c && typeof c.pin !== "string" && c.has_pin === undefined) {
      c.has_pin = false;
      if (c._ && c._.has_pin === undefined) {
        c._.has_pin = false;
      }
    }
    // A node marked pinSet without a stored PIN is a copy or an import (Node-RED never copies
    // credentials): the runtime refuses every message until a PIN is entered again, and the
    // mark stays unless "Remove PIN" is pressed (docs/access-rules.md#a-copied-node-and-its-pin).
    var pinLost = node.pinSet === true && !hadPin;
    var removing = false;
    pinInput.val("");
    function showPin() {
      var typed = String(pinInput.val() || "");
      pinInput.attr("placeholder", hadPin && !removing ? t("pin-placeholder-stored") : t("pin-placeholder-none"));
      var state;
      if (typed !== "") {
        state = pinProblem(typed) ? t("pin-invalid") : hadPin ? t("pin-replace") : t("pin-new");
      } else if (removing) {
        state = t("pin-removing");
      } else if (pinLost) {
        state = t("pin-missing");
      } else {
        state = hadPin ? t("pin-stored") : t("pin-none");
      }
      var problem = typed !== "" ? pinProblem(typed) !== null : pinLost && !removing;
      pinState.text(state).toggleClass("door-unlock-pin-problem", problem);
      pinRemove.toggle((hadPin || pinLost) && !removing);
    }
    pinInput.on("change keyup input paste", function () {
      if (String(pinInput.val() || "") !== "") {
        removing = false;
      }
      showPin();
    });
    pinRemove.on("click", function (evt) {
      evt.preventDefault();
      removing = true;
      pinInput.val("");
      showPin();
    });
    showPin();

    return {
      save: function (n) {
        var actors = [];
        actorsList.editableList("items").each(function () {
          var v = String($(this).find(".door-unlock-actor").val() || "").trim();
          if (v !== "") {
            actors.push(v);
          }
        });
        n.allowActors = actors;
        var windows = [];
        scheduleList.editableList("items").each(function () {
          var w = readWindow($(this));
          // A row left as added (no day, no time) is no window; anything else is kept as
          // entered, so that a window that cannot be read is flagged, never dropped.
          if (w.days.length === 0 && w.from === "" && w.to === "") {
            return;
          }
          windows.push(w);
        });
        n.schedule = windows;
        n.timeZone = String(zoneSel.val() || "");
        var c = String(cooldownInput.val() || "").trim();
        n.cooldown = c === "" ? 0 : /^[0-9]+$/.test(c) && Number(c) <= MAX_COOLDOWN_SECONDS ? Number(c) : c;
        // The PIN: a typed value is saved as typed (one that is not 4 to 12 digits too: the
        // runtime then refuses every message until it is corrected, and the caller says so);
        // an empty field keeps what was there unless "Remove PIN" was pressed.
        var typed = String(pinInput.val() || "");
        if (typed === "" && hadPin && !removing) {
          pinInput.val(initial);
        }
        var after = typed !== "" || (hadPin && !removing);
        setPinKnown(n.id, after);
        // The mark the flow file keeps (never the PIN): set while a PIN is, or was and is lost.
        n.pinSet = after || (pinLost && !removing);
        return { pinInvalid: typed !== "" && pinProblem(typed) !== null };
      },
    };
  }

  function readWindow(row) {
    var days = [];
    row.find(".door-unlock-day").each(function () {
      if ($(this).prop("checked")) {
        days.push(Number($(this).val()));
      }
    });
    return {
      days: days,
      from: String(row.find(".door-unlock-from").val() || ""),
      to: String(row.find(".door-unlock-to").val() || ""),
    };
  }

  window.DoorAccessRules = {
    STORED: STORED,
    actorsProblem: actorsProblem,
    scheduleProblem: scheduleProblem,
    zoneProblem: zoneProblem,
    cooldownProblem: cooldownProblem,
    pinProblem: pinProblem,
    hasRules: hasRules,
    hasPin: hasPin,
    section: section,
  };
})();
