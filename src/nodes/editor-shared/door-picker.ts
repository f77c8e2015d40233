/*
 * Editor code shared by the dialogs and the sidebar: the door picker and the door-id helpers
 * (door-status, door-unlock), the error text of a failed admin request and the notification
 * made from text (door-account and the "Door access" sidebar too).
 * Node-RED serves this file from the package's resources/ folder; each node's HTML and the
 * sidebar's load it with <script src="resources/@door-access/node-red/door-picker.js">.
 *
 * Text that came from a flow, the runtime or the service (names, base URLs, error texts, and
 * RED._() strings with such a __value__ in them: Node-RED's i18n does not escape) goes into the
 * page with .text(), .val() or .attr(), never .html() or a string given to $() or .append();
 * a notification is made with notifyText() below. A node's validate() returns fixed text only:
 * the editor shows that text as HTML in its tooltips (docs/security.md#text-in-the-editor-and-the-dashboard).
 */
(function () {
  "use strict";
  if (window.DoorAccessEditor) {
    return; // loaded already by another node's HTML
  }

  // The { error } text that our admin endpoints send with a failure, or null.
  function adminError(xhr) {
    var body = xhr.responseJSON;
    if (!body && xhr.responseText) {
      try {
        body = JSON.parse(xhr.responseText);
      } catch (e) {
        body = null;
      }
    }
    return body && typeof body.error === "string" ? body.error : null;
  }

  // RED.notify() takes a string as HTML: the text goes in as a <p> element's text instead.
  function notifyText(text, type) {
    return RED.notify($("<p>").text(text === null || text === undefined ? "" : String(text)), type);
  }

  // What the editor knows of a door-account config node: its settings and the credentials
  // typed since the last deploy (Node-RED keeps them on the node until it deploys). A
  // password-type credential the editor was never shown is sent as "__PWRD__".
  function editedAccount(id) {
    var n = RED.nodes.node(id) || {};
    var c = n.credentials || {};
    function secret(name) {
      if (typeof c[name] === "string" && c[name] !== "") {
        return c[name];
      }
      return c["has_" + name] ? "__PWRD__" : "";
    }
    return {
      baseUrl: n.baseUrl || "",
      loginMethod: n.loginMethod || "phone",
      phoneNumber: secret("phoneNumber"),
      email: secret("email"),
      password: secret("password"),
      sessionStore: n.sessionStore || "file",
      redisUrl: n.redisUrl || "",
      redisKeyPrefix: n.redisKeyPrefix || "",
      redisPassword: secret("redisPassword"),
    };
  }

  // Lists the account's doors from the runtime's admin endpoint and keeps the
  // chosen door as { deviceId, doorName, doorLocation }. A door that the list no
  // longer shows is kept and marked, never replaced by another one.
  function doorPicker(node, prefix, t, onDevice) {
    var sel = $("#" + prefix + "-door");
    var note = $("#" + prefix + "-door-note");
    var detail = $("#" + prefix + "-door-detail");
    var refreshBtn = $("#" + prefix + "-door-refresh");
    var accountSel = $("#node-input-account");
    var devices = [];
    var loaded = false;
    var lastAccount = null;
    var seq = 0;
    var closed = false;
    var current = identityOf(node.deviceId, node.doorName, node.doorLocation);

    function identityOf(deviceId, doorName, doorLocation) {
      var id = toDeviceId(deviceId);
      var name = doorName == null ? "" : String(doorName);
      var loc = doorLocation == null ? "" : String(doorLocation);
      if (id === "" && name === "") {
        return null;
      }
      return { deviceId: id, doorName: name, doorLocation: loc };
    }
    function deviceIdentity(d) {
      return identityOf(d.id, d.name || "", d.locationName || "");
    }
    // What the select shows: the door's name and location only, so that the chosen door fits
    // the select at the dialog's default width (docs/doors.md#picking-a-door-in-the-editor);
    // its online state, locks and id are in the line under the select (detailText). The id
    // is added only to tell apart doors of the same name at the same location.
    function doorText(door) {
      var name = door.doorName || t("picker.unnamed", { id: door.deviceId });
      return door.doorLocation ? name + " \u2014 " + door.doorLocation : name;
    }
    function optionText(d) {
      var text = doorText(deviceIdentity(d));
      var twins = devices.filter(function (o) {
        return (o.name || "") === (d.name || "") && (o.locationName || "") === (d.locationName || "");
      });
      return twins.length > 1 ? text + " \u00b7 " + t("picker.id", { id: d.id }) : text;
    }
    function detailText(d) {
      var parts = [];
      if (d.online === true) {
        parts.push(t("picker.online"));
      } else if (d.online === false) {
        parts.push(t("picker.offline"));
      } else {
        parts.push(t("picker.online-unknown"));
      }
      var locks = lockCountOf(d);
      if (locks === 1) {
        parts.push(t("picker.lock-one"));
      } else if (locks > 1) {
        parts.push(t("picker.lock-many", { count: locks }));
      }
      parts.push(t("picker.id", { id: d.id }));
      return parts.join(" \u00b7 ");
    }
    // The line under the select: the chosen door's online state, locks and id; for a kept door
    // that the list does not show, its id and that it is not in the list.
    function showDetail() {
      var v = sel.val();
      var text = "";
      if (v && v.indexOf("dev:") === 0 && devices[Number(v.slice(4))]) {
        text = detailText(devices[Number(v.slice(4))]);
      } else if (v === "kept" && current) {
        var parts = [];
        if (current.deviceId !== "") {
          parts.push(t("picker.id", { id: current.deviceId }));
        }
        if (loaded) {
          parts.push(t("picker.not-in-list"));
        }
        text = parts.join(" \u00b7 ");
      }
      detail.text(text).toggle(text !== "");
      // The whole text on hover, should a long door name still be cut.
      sel.attr("title", sel.find("option:selected").text() || "");
    }
    // Index of the device that is the kept door, or -1. The id and the
    // identity must agree; a door stored by id only (or by name only)
    // matches on what it has.
    function findCurrent() {
      if (!current) {
        return -1;
      }
      var i;
      for (i = 0; i < devices.length; i++) {
        var d = devices[i];
        if (current.deviceId !== "" && d.id !== current.deviceId) {
          continue;
        }
        if (current.doorName === "" && current.deviceId !== "") {
          return i;
        }
        if (
          (d.name || "") === current.doorName &&
          (current.doorLocation === "" || (d.locationName || "") === current.doorLocation)
        ) {
          if (current.deviceId !== "") {
            return i;
          }
          // Stored by name only: take it only when the name is unique.
          var others = devices.filter(function (o) {
            return (
              (o.name || "") === current.doorName &&
              (current.doorLocation === "" || (o.locationName || "") === current.doorLocation)
            );
          });
          return others.length === 1 ? i : -1;
        }
      }
      return -1;
    }
    function render() {
      sel.empty();
      $("<option>").val("none").text(t("picker.none")).appendTo(sel);
      var match = findCurrent();
      if (current && match === -1) {
        $("<option>").val("kept").text(doorText(current)).appendTo(sel);
      }
      devices.forEach(function (d, i) {
        $("<option>")
          .val("dev:" + i)
          .text(optionText(d))
          .appendTo(sel);
      });
      if (!current) {
        sel.val("none");
      } else if (match === -1) {
        sel.val("kept");
      } else {
        // Fill in what a door stored by id only (or name only) lacked.
        current = deviceIdentity(devices[match]);
        sel.val("dev:" + match);
      }
      $("#" + prefix + "-door-kept").toggle(loaded && !!current && match === -1);
      showDetail();
      onDevice(match === -1 ? null : devices[match], false);
    }
    function setNote(text, level) {
      note.text(text || "");
      note.css(
        "color",
        level === "error"
          ? "var(--red-ui-text-color-error, #c00)"
          : level === "warn"
            ? "var(--red-ui-text-color-warning, #b85c00)"
            : "",
      );
      note.toggle(!!text);
    }
    function errorText(xhr) {
      var error = adminError(xhr);
      if (error !== null) {
        return error;
      }
      if (xhr.statusText === "timeout") {
        return t("picker.timeout");
      }
      return (xhr.status ? xhr.status + " " : "") + (xhr.statusText || "");
    }
    function accountId() {
      var a = accountSel.val();
      if (a == null) {
        a = node.account;
      }
      return a && a !== "_ADD_" ? a : "";
    }
    function load(refresh) {
      var account = accountId();
      var mine = ++seq;
      lastAccount = account;
      devices = [];
      loaded = false;
      if (!account) {
        render();
        setNote(t("picker.no-account"), "warn");
        refreshBtn.prop("disabled", true);
        return;
      }
      render();
      setNote(t("picker.loading"));
      refreshBtn.prop("disabled", true);
      // The account as edited (deployed or not): its base URL and login go in a POST
      // body, so the runtime finds a running session of the same login; a credential the
      // editor was never shown stays "__PWRD__" and the runtime uses the deployed one.
      var body = editedAccount(account);
      delete body.password; // a list needs no password: only the running session's login
      delete body.redisPassword;
      // The list the runtime holds (door-account.read), or Refresh: fetched again from the
      // service (door-account.write). A POST is taken only as JSON with this header.
      $.ajax({
        url: "door-access/accounts/" + encodeURIComponent(account) + "/devices" + (refresh ? "/refresh" : ""),
        method: "POST",
        headers: { "X-Requested-With": "XMLHttpRequest" },
        contentType: "application/json",
        data: JSON.stringify(body),
        dataType: "json",
        cache: false,
        timeout: 30000,
      })
        .done(function (body) {
          if (closed || mine !== seq) {
            return;
          }
          var list = body && Array.isArray(body.devices) ? body.devices : [];
          devices = list
            .filter(function (d) {
              return d && typeof d.id === "number" && Math.floor(d.id) === d.id;
            })
            .sort(function (a, b) {
              var la = String(a.locationName || ""),
                lb = String(b.locationName || "");
              if (la !== lb) {
                return la.localeCompare(lb);
              }
              return String(a.name || "").localeCompare(String(b.name || "")) || a.id - b.id;
            });
          loaded = true;
          render();
          var text = devices.length ? t("picker.loaded", { count: devices.length }) : t("picker.empty");
          if (body && body.throttled === true) {
            text += " " + t("picker.cached", { age: body.ageSeconds, retry: body.retryInSeconds });
          }
          setNote(text, devices.length ? "" : "warn");
        })
        .fail(function (xhr) {
          if (closed || mine !== seq) {
            return;
          }
          render();
          var answer = xhr.responseJSON || null;
          if (xhr.status === 503 && answer && answer.signIn === true) {
            setNote(t("picker.sign-in-first"), "warn");
          } else if (xhr.status === 503 && answer && (answer.refresh === true || answer.state)) {
            setNote(t("picker.error", { error: errorText(xhr) }), "warn");
          } else if (xhr.status === 404 || xhr.status === 503) {
            setNote(t("picker.not-deployed"), "warn");
          } else {
            setNote(t("picker.error", { error: errorText(xhr) }), "error");
          }
        })
        .always(function () {
          if (closed || mine !== seq) {
            return;
          }
          refreshBtn.prop("disabled", false);
        });
    }

    sel.on("change", function () {
      var v = sel.val();
      var before = current;
      var device = null;
      if (v === "none") {
        current = null;
      } else if (v && v.indexOf("dev:") === 0) {
        device = devices[Number(v.slice(4))] || null;
        current = device ? deviceIdentity(device) : current;
      }
      // "kept": the door stays as it was.
      var changed = JSON.stringify(before) !== JSON.stringify(current);
      $("#" + prefix + "-door-kept").toggle(v === "kept" && loaded);
      showDetail();
      onDevice(device, changed);
    });
    refreshBtn.on("click", function (evt) {
      evt.preventDefault();
      load(true);
    });
    accountSel.on("change", function () {
      if (accountId() !== lastAccount) {
        load(false);
      }
    });
    load(false);

    return {
      value: function () {
        return current;
      },
      close: function () {
        closed = true;
        seq++;
      },
    };
  }

  // oneditsave: the picked door onto the node (deviceId, doorName, doorLocation); the picker closes.
  function savePickedDoor(node) {
    var picker = node._doorPicker;
    if (picker) {
      var door = picker.value();
      node.deviceId = door ? door.deviceId : "";
      node.doorName = door ? door.doorName : "";
      node.doorLocation = door ? door.doorLocation : "";
      closePicker(node);
    }
  }

  // oneditcancel (and after a save): stops the picker; a list still loading is ignored.
  function closePicker(node) {
    if (node._doorPicker) {
      node._doorPicker.close();
      delete node._doorPicker;
    }
  }

  function toDeviceId(v) {
    if (typeof v === "number" && Math.floor(v) === v && v > 0) {
      return v;
    }
    if (typeof v === "string" && /^\s*[0-9]+\s*$/.test(v) && Number(v) > 0) {
      return Number(v);
    }
    return "";
  }

  function lockCountOf(d) {
    if (Array.isArray(d.locks)) {
      return Math.max(d.locks.length, typeof d.lockCount === "number" ? d.lockCount : 0);
    }
    return typeof d.lockCount === "number" ? d.lockCount : 0;
  }

  function isDeviceIdValue(v) {
    if (v === "" || v === undefined || v === null) {
      return true;
    }
    return toDeviceId(v) !== "" && Number(v) <= 2147483647;
  }

  function doorLabel(node, tr) {
    if (node.doorName) {
      return node.doorLocation ? node.doorName + " (" + node.doorLocation + ")" : node.doorName;
    }
    if (toDeviceId(node.deviceId) !== "") {
      return tr("picker.unnamed", { id: node.deviceId });
    }
    return "";
  }

  window.DoorAccessEditor = {
    adminError: adminError,
    notifyText: notifyText,
    editedAccount: editedAccount,
    doorPicker: doorPicker,
    savePickedDoor: savePickedDoor,
    closePicker: closePicker,
    toDeviceId: toDeviceId,
    lockCountOf: lockCountOf,
    isDeviceIdValue: isDeviceIdValue,
    doorLabel: doorLabel,
  };
})();
