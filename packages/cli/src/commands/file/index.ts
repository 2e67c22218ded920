import { topicHelp } from "../../usage.js"

export default topicHelp("file", "Read, write, list and stat files in a VM", [
  "stoat file read dev /etc/os-release",
  "echo hi | stoat file write dev /tmp/hi",
  "stoat file ls dev /etc",
  "stoat file stat dev /etc/passwd"
])
