// Swagger UI over this service's /openapi.json; served from the swagger-ui-bundle package, no CDN.
window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null,  // the default asks a third-party validator for a badge image
  });
});
