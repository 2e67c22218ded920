export { AddressRefused, serveHttp, type HttpOptions, type RunningHttpServer } from "./transports/http.js"
