// askuser as an installed app: the settings page's "The askuser app" section
// (templates/askuser/settings/install.html) says how to install it here, and offers the browser's
// own install dialog where the browser offers one (beforeinstallprompt, Chromium's browsers).
// iOS has no such dialog, and delivers Web Push only to an app added to the home screen: the
// section says how to add it. Loaded on every page, since the browser may offer it on any.
(function () {
  "use strict";

  var offered = null; // the browser's deferred install dialog, when it offers one
  var installed = false; // installed from this page just now

  function section() {
    return document.getElementById("install-app");
  }

  function standalone() {
    return navigator.standalone === true ||
      ["standalone", "fullscreen", "minimal-ui"].some(function (mode) {
        return window.matchMedia("(display-mode: " + mode + ")").matches;
      });
  }

  function apple() {
    // iPadOS asks for desktop pages, and says so as a Mac with a touch screen.
    return /iPad|iPhone|iPod/.test(navigator.userAgent) ||
      (/Macintosh/.test(navigator.userAgent) && navigator.maxTouchPoints > 1);
  }

  function state() {
    if (installed || standalone()) return "installed";
    if (offered) return "offered";
    if (apple()) return "ios";
    return "menu";
  }

  function show() {
    var element = section();
    if (!element) return;
    var now = state();
    element.querySelectorAll("[data-install-state]").forEach(function (line) {
      line.hidden = line.dataset.installState !== now;
    });
    var button = element.querySelector("[data-install]");
    if (button) button.hidden = now !== "offered";
    element.dataset.state = now;
  }

  window.addEventListener("beforeinstallprompt", function (event) {
    event.preventDefault(); // not the browser's own banner: the page's button, when the person asks
    offered = event;
    show();
  });

  window.addEventListener("appinstalled", function () {
    offered = null;
    installed = true;
    show();
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-install]");
    if (!button || !offered) return;
    var dialog = offered;
    offered = null; // the browser lets a page show it once
    dialog.prompt();
    dialog.userChoice.then(function (choice) {
      installed = choice.outcome === "accepted";
      show();
    }, show);
  });

  show();
})();
