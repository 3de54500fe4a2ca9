// Progressive enhancement only: every page works without this file.
// A form marked data-confirm asks before it is sent (delete, rotate); the server still demands what it demands.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const question = form.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
    return;
  }
  // One submission per click: a second press while the first is under way would repeat the action.
  for (const button of form.querySelectorAll('button[type="submit"]')) button.disabled = true;
});

// Coming back to a page from the history shows it as it was left: its buttons usable again.
window.addEventListener('pageshow', () => {
  for (const button of document.querySelectorAll('button[type="submit"]')) button.disabled = false;
});
