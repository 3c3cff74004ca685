// NovelGraph's only script besides htmx. No inline scripts anywhere: the
// Content-Security-Policy allows only this site's own files.
document.addEventListener("htmx:responseError", (event) => {
  const target = event.detail.target;
  if (target && event.detail.xhr.status >= 500) {
    target.insertAdjacentHTML("afterbegin", '<p class="error" role="alert">Something went wrong on our side. Nothing was saved; please try again.</p>');
  }
});
