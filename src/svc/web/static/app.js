// The dashboard's own script: small behaviours htmx does not cover. No inline script anywhere
// (the Content-Security-Policy allows scripts from /static only); each behaviour is keyed on a
// data- attribute, so a page opts in by markup alone.
(function () {
  "use strict";

  function onReady(fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
  }

  // <select data-autosubmit>: the org switcher goes as soon as an org is picked (its Go button
  // stays for keyboards and for browsers without script).
  function autosubmit(root) {
    root.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () { select.form.submit(); });
    });
  }

  // <button data-copy="value">: copy to the clipboard, and say so.
  function copyButtons(root) {
    root.querySelectorAll("button[data-copy]").forEach(function (button) {
      if (button.dataset.bound) { return; }
      button.dataset.bound = "1";
      button.addEventListener("click", function () {
        var label = button.textContent;
        var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = label; }, 1500); };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(button.dataset.copy).then(done, function () { button.textContent = "Select and copy"; });
        } else {
          var code = button.parentElement.querySelector("code");
          if (code) { var range = document.createRange(); range.selectNodeContents(code); var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range); }
          try { document.execCommand("copy"); done(); } catch (e) { button.textContent = "Select and copy"; }
        }
      });
    });
  }

  // <input data-must-equal="name" data-enables="button-id">: a typed confirmation enables the button.
  function typedConfirmations(root) {
    root.querySelectorAll("input[data-must-equal]").forEach(function (input) {
      var button = document.getElementById(input.dataset.enables);
      if (!button) { return; }
      var check = function () { button.disabled = input.value.trim() !== input.dataset.mustEqual; };
      input.addEventListener("input", check);
      check();
    });
  }

  // The identity provider's sign-in lands on /signin/complete with the session in the URL
  // fragment, which never reaches a server: post it (with the page's binding) and forget it.
  function finishSignIn() {
    var form = document.getElementById("idp-complete");
    if (!form || location.hash.length < 2) { return; }
    var fragment = new URLSearchParams(location.hash.slice(1));
    history.replaceState(null, "", location.pathname + location.search);
    ["token", "error", "message"].forEach(function (name) {
      if (fragment.get(name)) { form.elements[name].value = fragment.get(name); }
    });
    form.submit();
  }

  // <div class="table-wrap">: a table wider than a phone scrolls sideways; a region that scrolls
  // must be reachable by keyboard (focusable) and named for screen readers, only when it scrolls.
  function scrollRegions(root) {
    root.querySelectorAll(".table-wrap").forEach(function (wrap) {
      if (wrap.scrollWidth > wrap.clientWidth + 1) {
        wrap.setAttribute("tabindex", "0");
        wrap.setAttribute("role", "region");
        if (!wrap.getAttribute("aria-label")) {
          var heading = wrap.closest("section") && wrap.closest("section").querySelector("h2, h1");
          wrap.setAttribute("aria-label", (heading ? heading.textContent.trim() : document.title) + " (table, scrolls sideways)");
        }
      } else if (wrap.getAttribute("role") === "region") {
        wrap.removeAttribute("tabindex");
        wrap.removeAttribute("role");
      }
    });
  }

  // The one-time notice tells of the last change. Once another change is sent from the page it is
  // out of date: a "Saved" left above a form that now shows a refusal would say the opposite.
  function dropNotice() {
    document.querySelectorAll("[data-flash]").forEach(function (notice) { notice.remove(); });
  }
  window.svcDropNotice = dropNotice;  // upload.js sends its change itself

  function enhance(root) {
    scrollRegions(document);
    autosubmit(root);
    copyButtons(root);
    typedConfirmations(root);
  }

  // A phone starts with the navigation folded (the page's content first); a desktop never folds it.
  function foldMenu() {
    var menu = document.querySelector("details.menu");
    if (menu && window.matchMedia("(max-width: 768px)").matches) { menu.removeAttribute("open"); }
  }

  onReady(function () {
    foldMenu();
    enhance(document);
    finishSignIn();
    window.addEventListener("resize", function () { scrollRegions(document); });
    document.body.addEventListener("htmx:beforeRequest", function (event) {
      var config = event.detail.requestConfig;
      if (config && config.verb !== "get") { dropNotice(); }
    });
    // svc answers htmx with HX-Redirect after a change, and a plain post with a 303. When htmx gets
    // the 303 (the server did not see the request as htmx's: a proxy that drops HX-Request), the
    // browser follows it unseen and htmx would swap the next page into the form, the address left
    // behind (a reload showing the old page): go to that page instead, as a plain post would.
    document.body.addEventListener("htmx:beforeSwap", function (event) {
      var xhr = event.detail.xhr;
      var asked = event.detail.pathInfo && event.detail.pathInfo.finalRequestPath;
      if (!xhr || !xhr.responseURL || !asked) { return; }
      var answered = new URL(xhr.responseURL);
      var requested = new URL(asked, location.href);
      if (answered.pathname + answered.search !== requested.pathname + requested.search) {
        event.detail.shouldSwap = false;
        location.href = xhr.responseURL;
      }
    });
    // Move focus to a message htmx just put in place, so a screen reader hears it at once.
    document.body.addEventListener("htmx:afterSwap", function (event) {
      enhance(event.detail.target);
      var alert = event.detail.target.querySelector("[role=alert]");
      if (alert) { alert.setAttribute("tabindex", "-1"); alert.focus(); }
    });
    // <a role="button"> (a link that looks and acts as a button, such as a record set's Edit):
    // Space presses it too, as it does a button.
    document.addEventListener("keydown", function (event) {
      var link = event.target;
      if (event.key === " " && link.matches && link.matches("a[role=button]")) { event.preventDefault(); link.click(); }
    });
    // Content swapped in whole (hx-swap="outerHTML": a table row turned into a form and back, a
    // block that polls itself) replaces the element that had the focus: give the new content the
    // behaviours above and put the focus on its message, else where its markup asks
    // (data-focus-after-swap), so a keyboard stays in place.
    document.body.addEventListener("htmx:load", function (event) {
      var elt = event.detail.elt;
      if (!elt || elt === document.body || !elt.querySelector) { return; }
      copyButtons(elt);
      var target = elt.querySelector("[role=alert]") || (elt.matches("[data-focus-after-swap]") ? elt : elt.querySelector("[data-focus-after-swap]"));
      if (target) {
        if (target.getAttribute("role") === "alert") { target.setAttribute("tabindex", "-1"); }
        target.focus();
      }
    });
  });
})();
