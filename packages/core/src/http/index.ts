export {
  checkRequest,
  isLoopbackHost,
  parseLoopbackAddress,
  type GuardOptions,
  type GuardVerdict,
  type ListenAddress,
  type RequestHeaders
} from "./guard.js"
