// The episode viewer: one turn at a time (turn 0 is the reset observation), stepped with the
// Prev/Next buttons or the arrow keys; "show all turns" lays the whole transcript out instead.
// The page works without this script: every turn is then shown.
(function () {
  "use strict";
  var viewer = document.getElementById("viewer");
  if (!viewer) return;
  var turns = Array.prototype.slice.call(viewer.querySelectorAll(".turn"));
  var last = turns.length - 1;
  var indicator = document.getElementById("turn-index");
  var previous = document.getElementById("prev");
  var next = document.getElementById("next");
  var all = document.getElementById("all-turns");
  var current = 0;

  function show(index) {
    current = Math.max(0, Math.min(last, index));
    turns.forEach(function (turn, k) { turn.hidden = !all.checked && k !== current; });
    turns.forEach(function (turn, k) { turn.classList.toggle("current", k === current); });
    indicator.textContent = "turn " + current + " of " + last;
    previous.disabled = current === 0;
    next.disabled = current === last;
    try {
      history.replaceState(null, "", "#turn-" + current);
    } catch (error) {
      // some browsers refuse replaceState on file:// pages; the viewer works without it
    }
  }

  previous.addEventListener("click", function () { show(current - 1); });
  next.addEventListener("click", function () { show(current + 1); });
  all.addEventListener("change", function () { show(current); });
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.closest && event.target.closest("textarea, select, input:not([type=checkbox])")) return;
    var moves = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 0, End: last };
    if (!(event.key in moves)) return;
    event.preventDefault();
    show(moves[event.key]);
  });

  var asked = /^#turn-(\d+)$/.exec(location.hash);
  viewer.classList.add("stepping");
  show(asked ? Number(asked[1]) : 0);
})();
