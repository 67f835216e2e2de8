require "fast/fast"
