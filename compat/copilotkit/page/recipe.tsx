/**
 * Shared state: the recipe is the agent's state, edited on the page (`agent.setState`, sent as
 * the next run's `RunAgentInput.state`) and by the agent (its snapshots and deltas).
 */

type Ingredient = { icon?: string; name: string; amount: string }
type RecipeState = {
  recipe?: { title?: string; ingredients?: Ingredient[]; instructions?: string[] } & Record<
    string,
    unknown
  >
}

const box = { border: '1px solid #c7c7d1', borderRadius: 8, padding: 12, margin: '8px 0' }

export function Recipe(props: {
  useAgentState: <T>() => { agent: { setState(state: any): void }; state: T }
}) {
  const { agent, state } = props.useAgentState<RecipeState>()
  const recipe = state.recipe ?? {}
  const ingredients = recipe.ingredients ?? []
  const setIngredients = (next: Ingredient[]) =>
    agent.setState({ ...state, recipe: { ...recipe, ingredients: next } })
  const edit = (i: number, field: 'name' | 'amount', value: string) =>
    setIngredients(ingredients.map((item, n) => (n === i ? { ...item, [field]: value } : item)))
  return (
    <div data-testid="recipe" style={box}>
      <h2>{recipe.title ?? 'My recipe'}</h2>
      <div data-testid="ingredients">
        {ingredients.map((item, i) => (
          <div key={i} className="ingredient-card" data-testid="ingredient-card">
            <span>{item.icon ?? '•'}</span>
            <input
              className="ingredient-name-input"
              value={item.name}
              placeholder="Ingredient"
              onChange={(event) => edit(i, 'name', event.target.value)}
            />
            <input
              className="ingredient-amount-input"
              value={item.amount}
              placeholder="Amount"
              onChange={(event) => edit(i, 'amount', event.target.value)}
            />
          </div>
        ))}
      </div>
      <button
        data-testid="add-ingredient"
        onClick={() => setIngredients([...ingredients, { icon: '🍴', name: '', amount: '' }])}
      >
        + Add Ingredient
      </button>
      <ol data-testid="instructions">
        {(recipe.instructions ?? []).map((step, i) => (
          <li key={i} data-testid="instruction-item">
            {step}
          </li>
        ))}
      </ol>
    </div>
  )
}
