module X; end
