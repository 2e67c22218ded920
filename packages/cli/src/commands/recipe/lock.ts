import { lockRecipes } from "@stoat/core"
import { pinsCommand } from "../../views/recipe-pins.js"

export default pinsCommand(lockRecipes, "Pin declared recipes in stoat.lock")
