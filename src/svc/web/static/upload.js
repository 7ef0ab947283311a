// Deploying from the Deployments page: a .tar.gz bundle, or a folder packed here into one, sent as
// the request body of POST .../deployments/upload (the API's deploy). A folder is packed the way
// `svc deploy` packs it (src/svc/cli/bundle.py), so the browser and the CLI make the same site:
// svc.json at the root (an empty {} when the folder has none), then the folder's assets/ and
// worker/ when it has either, else all its other files under assets/; dot-files (except
// .well-known), .git, node_modules and .svc are left out.
(function () {
  "use strict";

  var SKIP = { ".git": 1, "node_modules": 1, ".svc": 1 };
  var encoder = new TextEncoder();

  function skipped(path) {
    return path.split("/").some(function (part) {
      return SKIP[part] || (part.charAt(0) === "." && part !== ".well-known");
    });
  }

  // --- tar (POSIX ustar; a pax record for a path too long for ustar's name and prefix) --------

  function field(block, offset, length, text) {
    block.set(encoder.encode(text).subarray(0, length), offset);
  }

  function octal(n, length) {  // zero-padded, NUL-terminated
    return n.toString(8).padStart(length - 1, "0") + "\0";
  }

  function header(name, size, mtime, type, prefix) {
    var block = new Uint8Array(512);
    field(block, 0, 100, name);
    field(block, 100, 8, octal(type === "5" ? 493 : 420, 8));  // 0755 / 0644
    field(block, 108, 8, octal(0, 8));
    field(block, 116, 8, octal(0, 8));
    field(block, 124, 12, octal(size, 12));
    field(block, 136, 12, octal(mtime, 12));
    field(block, 148, 8, "        ");  // the checksum counts its own field as spaces
    field(block, 156, 1, type);
    field(block, 257, 8, "ustar\u000000");
    field(block, 345, 155, prefix || "");
    var sum = block.reduce(function (a, b) { return a + b; }, 0);
    field(block, 148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
    return block;
  }

  function padding(size) {
    return new Uint8Array((512 - (size % 512)) % 512);
  }

  // ustar splits a long path at a "/" into prefix (155 bytes) and name (100 bytes); when that
  // cannot hold it, a pax header carries the whole path ("<length> path=<path>\n").
  function entry(parts, path, size, mtime, type) {
    var bytes = encoder.encode(path);
    if (bytes.length <= 100) { parts.push(header(path, size, mtime, type)); return; }
    for (var i = path.indexOf("/"); i > 0; i = path.indexOf("/", i + 1)) {
      if (encoder.encode(path.slice(0, i)).length <= 155 && encoder.encode(path.slice(i + 1)).length <= 100) {
        parts.push(header(path.slice(i + 1), size, mtime, type, path.slice(0, i)));
        return;
      }
    }
    var body = " path=" + path + "\n";
    var length = encoder.encode(body).length;
    length += String(length + String(length).length).length;
    var record = encoder.encode(length + body);
    parts.push(header("PaxHeader", record.length, mtime, "x"), record, padding(record.length));
    parts.push(header(path.slice(0, 100), size, mtime, type));
  }

  // files: [{path, file}] with paths relative to the folder; returns the gzipped bundle (a Blob).
  function pack(files) {
    files = files.filter(function (f) { return !skipped(f.path); });
    var manifest = files.find(function (f) { return f.path === "svc.json"; });
    var layout = files.some(function (f) { return /^(assets|worker)\//.test(f.path); });
    var parts = [];
    var data = manifest ? manifest.file : new Blob(["{}"]);
    entry(parts, "svc.json", data.size, manifest ? Math.floor(manifest.file.lastModified / 1000) : 0, "0");
    parts.push(data, padding(data.size));
    var chosen = layout
      ? files.filter(function (f) { return /^(assets|worker)\//.test(f.path); })
      : files.filter(function (f) { return f !== manifest; }).map(function (f) { return { path: "assets/" + f.path, file: f.file }; });
    chosen.sort(function (a, b) { return a.path < b.path ? -1 : a.path > b.path ? 1 : 0; });
    chosen.forEach(function (f) {
      entry(parts, f.path, f.file.size, Math.floor((f.file.lastModified || 0) / 1000), "0");
      parts.push(f.file, padding(f.file.size));
    });
    parts.push(new Uint8Array(1024));  // the end-of-archive blocks
    var gzipped = new Blob(parts).stream().pipeThrough(new CompressionStream("gzip"));
    return new Response(gzipped).blob().then(function (blob) { return { blob: blob, count: chosen.length }; });
  }

  // --- what was dropped or chosen ---------------------------------------------------------------

  function readEntries(reader) {  // a directory reader answers in batches until an empty one
    return new Promise(function (resolve, reject) {
      var all = [];
      (function next() {
        reader.readEntries(function (batch) {
          if (!batch.length) { resolve(all); return; }
          all = all.concat(batch);
          next();
        }, reject);
      })();
    });
  }

  function walk(entry, prefix) {
    if (entry.isFile) {
      return new Promise(function (resolve, reject) {
        entry.file(function (file) { resolve([{ path: prefix + entry.name, file: file }]); }, reject);
      });
    }
    if (skipped(entry.name)) { return Promise.resolve([]); }
    return readEntries(entry.createReader()).then(function (children) {
      return Promise.all(children.map(function (child) { return walk(child, prefix + entry.name + "/"); }));
    }).then(function (lists) { return [].concat.apply([], lists); });
  }

  function fromFolderInput(input) {  // webkitRelativePath is "folder/sub/file": drop "folder/"
    return Array.prototype.map.call(input.files, function (file) {
      var path = file.webkitRelativePath || file.name;
      return { path: path.slice(path.indexOf("/") + 1), file: file };
    });
  }

  // --- the upload -------------------------------------------------------------------------------

  function setup(zone) {
    var bar = document.getElementById("upload-bar");
    var status = document.getElementById("upload-status");
    var result = document.getElementById("upload-result");
    var bundleInput = document.getElementById("bundle-file");
    var folderInput = document.getElementById("bundle-folder");
    var inputs = [bundleInput, folderInput];
    var busy = false;

    function say(text) { status.textContent = text; }

    function finish() {
      busy = false;
      zone.classList.remove("busy");
      inputs.forEach(function (input) { input.disabled = false; input.value = ""; });
    }

    function show(html, ok) {
      result.innerHTML = html;
      var alert = result.querySelector("[role=alert]");
      if (alert) { alert.setAttribute("tabindex", "-1"); alert.focus(); }
      if (ok && window.htmx) {  // the new version in the list; the live URL stays in the result box
        window.htmx.ajax("GET", zone.dataset.listUrl, { target: "#deployments", swap: "outerHTML" });
      }
    }

    function send(blob) {
      if (window.svcDropNotice) { window.svcDropNotice(); }
      var token = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"] || "";
      var xhr = new XMLHttpRequest();
      xhr.open("POST", zone.dataset.uploadUrl);
      xhr.setRequestHeader("Content-Type", "application/gzip");
      xhr.setRequestHeader("X-CSRF-Token", token);
      xhr.setRequestHeader("HX-Request", "true");  // a refusal comes back as a message, not a page
      var told = -1;
      xhr.upload.onprogress = function (event) {
        if (!event.lengthComputable) { return; }
        var percent = Math.floor((event.loaded / event.total) * 100);
        bar.value = percent;
        // The status is a live region: told in steps of 10%, not at every event.
        if (Math.floor(percent / 10) !== Math.floor(told / 10)) { told = percent; say("Uploading: " + percent + "%"); }
      };
      xhr.upload.onload = function () { bar.value = 100; say("Uploaded: putting it live…"); };
      xhr.onload = function () {
        var moved = xhr.getResponseHeader("HX-Redirect");  // the session ended: sign in again
        if (moved) { window.location.href = moved; return; }
        var ok = xhr.status >= 200 && xhr.status < 300;
        bar.value = ok ? 100 : 0;
        say(ok ? "Done: 100%, live." : "The upload was refused; nothing changed.");
        show(xhr.responseText, ok);
        finish();
      };
      xhr.onerror = function () {
        bar.value = 0;
        say("The upload did not reach svc (the connection was lost); nothing changed.");
        finish();
      };
      xhr.send(blob);
    }

    function start(work) {
      if (busy) { return; }
      busy = true;
      zone.classList.add("busy");
      inputs.forEach(function (input) { input.disabled = true; });
      result.innerHTML = "";
      bar.hidden = false;
      bar.value = 0;
      work.then(send, function (err) {
        say("The folder could not be read: " + (err && err.message ? err.message : err));
        finish();
      });
    }

    function packFiles(files) {
      if (!files.length) { return Promise.reject(new Error("it holds no files")); }
      say("Packing " + files.length + " files…");
      return pack(files).then(function (packed) { return packed.blob; });
    }

    bundleInput.addEventListener("change", function () {
      if (bundleInput.files.length) { start(Promise.resolve(bundleInput.files[0])); }
    });
    folderInput.addEventListener("change", function () {
      if (folderInput.files.length) { start(packFiles(fromFolderInput(folderInput))); }
    });

    // A file dropped beside the zone would make the browser leave the page to show it.
    window.addEventListener("dragover", function (event) { event.preventDefault(); });
    window.addEventListener("drop", function (event) { event.preventDefault(); });
    zone.addEventListener("dragover", function (event) {
      event.preventDefault();
      zone.classList.add("over");
    });
    zone.addEventListener("dragleave", function () { zone.classList.remove("over"); });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      zone.classList.remove("over");
      var data = event.dataTransfer;
      // Entries must be taken now: the DataTransfer is emptied once this handler returns.
      var entries = Array.prototype.map.call(data.items || [], function (item) {
        return item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
      }).filter(Boolean);
      if (entries.length === 1 && entries[0].isDirectory) {  // a folder: its contents, at the root
        start(readEntries(entries[0].createReader()).then(function (children) {
          return Promise.all(children.map(function (child) { return walk(child, ""); }));
        }).then(function (lists) { return packFiles([].concat.apply([], lists)); }));
      } else if (data.files.length === 1 && !entries.some(function (e) { return e.isDirectory; })) {
        start(Promise.resolve(data.files[0]));  // a bundle, sent as it is
      } else if (entries.length) {  // several files and folders: packed as one folder
        start(Promise.all(entries.map(function (e) { return walk(e, ""); })).then(function (lists) {
          return packFiles([].concat.apply([], lists));
        }));
      }
    });
  }

  function onReady(fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
  }

  onReady(function () {
    var zone = document.getElementById("upload");
    if (zone && window.CompressionStream) { setup(zone); }
  });
})();
