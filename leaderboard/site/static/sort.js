// Sorting for every table.sortable: a click on a header with data-col sorts its rows by that
// column (numbers by value from each cell's data-value, text alphabetically); a second click
// on the same header reverses the order. Cells without a value stay last either way, so a row
// with no result never climbs to the top of an ascending sort.
(function () {
  "use strict";

  function cellValue(row, column, numeric) {
    var cell = row.cells[column];
    if (!cell) return null;
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent;
    raw = raw.trim();
    if (raw === "") return null;
    if (!numeric) return raw.toLowerCase();
    var value = Number(raw);
    return Number.isNaN(value) ? null : value;
  }

  function firstDirection(header) {
    // best first: high numbers first, except a rank where 1 is best; text from A
    if (header.dataset.type === "text" || header.dataset.col === "rank") return "ascending";
    return "descending";
  }

  function sortBy(table, header) {
    var headers = Array.prototype.slice.call(header.parentElement.children);
    var column = headers.indexOf(header);
    var numeric = header.dataset.type !== "text";
    var current = header.getAttribute("aria-sort");
    var direction = current === "descending" ? "ascending"
      : current === "ascending" ? "descending" : firstDirection(header);
    var sign = direction === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, column, numeric);
      var y = cellValue(b, column, numeric);
      if (x === null || y === null) return (x === null) - (y === null);
      if (x < y) return -sign;
      if (x > y) return sign;
      return 0;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction);
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th[data-col]").forEach(function (header) {
      header.addEventListener("click", function () { sortBy(table, header); });
    });
  });
})();
