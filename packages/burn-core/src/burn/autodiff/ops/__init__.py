"""Float ops of the Autodiff backend with their backward rules, one mixin per op family."""
