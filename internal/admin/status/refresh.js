// Swaps in the sections the server renders every data-refresh-ms, one
// request at a time; a failed one leaves the last data up and says so.
(() => {
  const every = Number(document.body.dataset.refreshMs);
  const sections = document.getElementById("sections");
  const note = document.getElementById("refresh");
  const refresh = async () => {
    const at = new Date().toLocaleTimeString();
    try {
      const r = await fetch("/status/sections", {cache: "no-store", credentials: "same-origin"});
      if (!r.ok) throw new Error(r.status + " " + r.statusText);
      sections.innerHTML = await r.text();
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
