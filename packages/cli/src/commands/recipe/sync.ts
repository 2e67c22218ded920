import { syncRecipes } from "@stoat/core"
import { pinsCommand } from "../../views/recipe-pins.js"

export default pinsCommand(syncRecipes, "Make recipe checkouts match stoat.lock")
