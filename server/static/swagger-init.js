// Starts Swagger UI on /docs. A file of its own, not an inline <script>: the page's Content-Security-Policy allows
// scripts from this host only. The OpenAPI document's URL comes from the page (FastAPI's openapi_url).
"use strict";
(function () {
  const root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    domNode: root,
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
})();
