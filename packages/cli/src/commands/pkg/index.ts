import { topicHelp } from "../../usage.js"

export default topicHelp("pkg", "Install packages in a VM", ["stoat pkg install dev curl jq"])
