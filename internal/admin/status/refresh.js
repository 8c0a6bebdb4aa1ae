// Swaps in the sections the server renders every data-refresh-ms, one
// request at a time; a failed one leaves the last data up and says so.
// What the operator opened (a <details> with a data-key) stays open.
(() => {
  const every = Number(document.body.dataset.refreshMs);
  const sections = document.getElementById("sections");
  const note = document.getElementById("refresh");
  const openKeys = () => new Set(Array.from(sections.querySelectorAll("details[open][data-key]"), d => d.dataset.key));
  const reopen = keys => {
    for (const d of sections.querySelectorAll("details[data-key]")) {
      if (keys.has(d.dataset.key)) d.open = true;
    }
  };
  const refresh = async () => {
    const at = new Date().toLocaleTimeString();
    try {
      const r = await fetch("/status/sections", {cache: "no-store", credentials: "same-origin"});
      if (!r.ok) throw new Error(r.status + " " + r.statusText);
      const html = await r.text();
      const keys = openKeys();
      sections.innerHTML = html;
      reopen(keys);
      note.textContent = "Live: refreshed at " + at + ", every " + every / 1000 + " s.";
      note.className = "";
    } catch (e) {
      note.textContent = "Refresh failed at " + at + " (" + e.message + "); the data below is older.";
      note.className = "stale";
    }
    setTimeout(refresh, every);
  };
  setTimeout(refresh, every);
})();
