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

  function enhance(root) {
    autosubmit(root);
    copyButtons(root);
    typedConfirmations(root);
  }

  onReady(function () {
    enhance(document);
    finishSignIn();
    // Move focus to a message htmx just put in place, so a screen reader hears it at once.
    document.body.addEventListener("htmx:afterSwap", function (event) {
      enhance(event.detail.target);
      var alert = event.detail.target.querySelector("[role=alert]");
      if (alert) { alert.setAttribute("tabindex", "-1"); alert.focus(); }
    });
  });
})();
