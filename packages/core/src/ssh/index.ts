export { CD_SCRIPT, ENV_NAME, guestCommand, quoteWord, shellQuote, shellWord, type CommandOptions } from "./quote.js"
export { GuestTransportLive, guestTransportLayer, makeGuestTransport, type GuestTransportOptions } from "./live.js"
export { openJump } from "./jump.js"
