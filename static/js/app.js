// NovelGraph's only script besides htmx. No inline scripts anywhere: the
// Content-Security-Policy allows only this site's own files.

// Forms answer a refused or invalid write with 4xx and an inline message in the
// fragment (nothing changed). Let htmx swap those fragments in like a 200; other
// errors keep htmx's default (no swap) and get the notice below.
if (window.htmx) {
  window.htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "409", swap: true, error: false },
    { code: "422", swap: true, error: false },
    { code: "[45]..", swap: false, error: true },
  ];
}

document.addEventListener("htmx:responseError", (event) => {
  const target = event.detail.target;
  const status = event.detail.xhr.status;
  const message =
    status >= 500
      ? "Something went wrong on our side. Nothing was saved; please try again."
      : status === 403
        ? "You are not allowed to do that: only the book's author decides."
        : null;
  if (target && message) {
    const notice = document.createElement("p");
    notice.className = "error";
    notice.setAttribute("role", "alert");
    notice.textContent = message;
    target.prepend(notice);
  }
});

// After an in-place update, move focus to the first field marked invalid so keyboard
// and screen-reader users hear what needs fixing (its message is aria-describedby).
document.addEventListener("htmx:afterSettle", () => {
  const field = document.querySelector('[aria-invalid="true"]');
  if (field) field.focus();
});

// Destructive actions confirm first: a form with data-confirm asks before it is sent
// (with htmx too: the check runs before htmx sees the submit).
document.addEventListener(
  "submit",
  (event) => {
    const form = event.target;
    let question = form instanceof HTMLFormElement ? form.dataset.confirm : null;
    // A verdict form asks only for the verdicts that discard work (data-confirm-verdicts lists them).
    if (form instanceof HTMLFormElement && form.dataset.confirmVerdicts && form.elements.verdict) {
      const chosen = form.elements.verdict.value;
      if (form.dataset.confirmVerdicts.split(" ").includes(chosen)) {
        // The verdict's own impact preview, where the page has one (abandon), else the form's general words.
        const own = form.dataset[`confirmText${chosen.charAt(0).toUpperCase()}${chosen.slice(1)}`];
        question = `${chosen}: ${own || form.dataset.confirmText || "this discards work."} Record it?`;
      }
    }
    if (question && !window.confirm(question)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  },
  true,
);

// Phone width: the Menu button opens and closes the main navigation.
document.documentElement.classList.add("js");
document.addEventListener("click", (event) => {
  const toggle = event.target instanceof Element ? event.target.closest(".nav-toggle") : null;
  if (!toggle) return;
  const header = toggle.closest(".site-header");
  const open = header.classList.toggle("nav-open");
  toggle.setAttribute("aria-expanded", open ? "true" : "false");
});
