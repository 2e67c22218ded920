import { topicHelp } from "../../usage.js"

export default topicHelp("user", "Add users in a VM", ["stoat user add dev alice"])
