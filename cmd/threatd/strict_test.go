package main_test
